"""Where the app's events come from: a live run (with connect retries) or a recording.

Both go through `consume.pump`, so the store, the recorder and the views see one stream in one
order whether it is live or replayed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Protocol

from kltui.helpers.extras import for_opened
from kltui.helpers.phases import Run
from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.consume import pump
from kltui.session.events import Event, Problem, RunFinished, RunStarted
from kltui.session.fold import ReplayClock, recording_epoch, split_runs
from kltui.session.recording import Recorder, Recording
from kltui.session.store import SessionStore

RETRY_FIRST_S = 1
RETRY_MAX_S = 30
INSTANT_CHUNK = 2000  # events applied between yields to the UI in an instant replay


class Sink(Protocol):
    """What a feed drives (the app)."""

    def feed_start_run(self) -> SessionStore: ...
    def feed_event(self, event: Event) -> None: ...
    def feed_end_run(
        self, store: SessionStore, *, counted: bool, recording: str | None
    ) -> None: ...
    def feed_retry(self, seconds: int | None, attempt: int) -> None: ...
    def feed_error(self, message: str) -> None: ...
    async def confirm_flush(self, client) -> bool: ...


def connect_failed(store: SessionStore) -> bool:
    """The run never reached a server: every server errored while connecting."""
    run = store.run
    if run is None:
        return any(p.phase == "connect" for p in store.problems)
    return bool(run.servers) and all(s.get("error") for s in run.servers)


def nth_path(base: str, n: int) -> str:
    """Recording path of the n-th run of a session: run 1 keeps the name the user gave."""
    if n <= 1:
        return base
    p = Path(base)
    name = p.name
    for suffix in (".kltui.jsonl", ".jsonl"):
        if name.endswith(suffix):
            return str(p.with_name(f"{name[: -len(suffix)]}-{n}{suffix}"))
    return str(p.with_name(f"{p.stem}-{n}{p.suffix}"))


class LazyRecorder:
    """Opens the recording only once the run measured something or got past connecting, so a
    server that stays down for an hour of retries does not leave hundreds of empty files."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._rec: Recorder | None = None
        self._buffer: list[Event] = []
        self._servers_ok = False

    @property
    def opened(self) -> bool:
        return self._rec is not None

    def _open(self) -> None:
        self._rec = Recorder(self.path)
        for ev in self._buffer:
            self._rec.write(ev)
        self._buffer.clear()

    def write(self, ev: Event) -> None:
        if self._rec is not None:
            self._rec.write(ev)
            return
        self._buffer.append(ev)
        if isinstance(ev, RunStarted):
            self._servers_ok = any(not s.get("error") for s in ev.servers)
        elif isinstance(ev, RunFinished):
            if self._servers_ok:
                self._open()
        elif not isinstance(ev, Problem):
            self._open()

    def close(self) -> None:
        if self._rec is None and self._servers_ok and self._buffer:
            self._open()
        if self._rec is not None:
            self._rec.close()


class LiveFeed:
    mode = "live"

    def __init__(self, cfg: RunConfig, record: str | None) -> None:
        self.cfg = cfg
        self.record = record
        self.recorded_runs = 0
        # the last run's helper runs: what a sample opened after it needs for its extras
        self.runs: list[Run] = []

    @property
    def servers(self) -> list[str]:
        return list(self.cfg.servers)

    async def run(self, sink: Sink, events: Callable[[], AsyncIterator[Event]] | None = None):
        """One run; while no server answers, retry after 1, 2, 4 ... 30 s with a countdown."""
        confirm = getattr(sink, "confirm_flush", None)
        make = events or (lambda: run_session(self.cfg, confirm, live_view=True, keep=self._keep()))
        delay = RETRY_FIRST_S
        attempt = 0
        while True:
            store = sink.feed_start_run()
            recorder = None
            if self.record:
                recorder = LazyRecorder(nth_path(self.record, self.recorded_runs + 1))
            try:
                await pump(make(), store, recorder, sink.feed_event)
            except asyncio.CancelledError:
                self._close(recorder)
                sink.feed_end_run(store, counted=True, recording=self._path(recorder))
                raise
            except Exception as e:  # noqa: BLE001 - the app must survive any fault of a run
                self._close(recorder)
                sink.feed_error(f"{type(e).__name__}: {e}")
                sink.feed_end_run(
                    store, counted=store.run is not None, recording=self._path(recorder)
                )
                return
            self._close(recorder)
            if not connect_failed(store):
                sink.feed_end_run(store, counted=True, recording=self._path(recorder))
                return
            sink.feed_end_run(store, counted=False, recording=None)
            for remaining in range(delay, 0, -1):
                sink.feed_retry(remaining, attempt)
                await asyncio.sleep(1)
            sink.feed_retry(None, attempt)
            attempt += 1
            delay = min(RETRY_MAX_S, delay * 2)

    def _keep(self) -> list[Run]:
        self.runs = []
        return self.runs

    async def fetch_opened(
        self, helper: str, server: str, sample: int, around: int | None
    ) -> list[Event] | None:
        """Top-k and text of a sample opened after the run (one bounded request); None when
        this run kept nothing for that helper (not a helper with extras, or run by other means)."""
        run = next((r for r in self.runs if r.helper == helper and r.ctx.server == server), None)
        if run is None:
            return None
        cfg = self.cfg
        return await for_opened(
            run, sample, around, cfg.top_k, cfg.server_api_key(), cfg.request_timeout
        )

    def _close(self, recorder: LazyRecorder | None) -> None:
        if recorder is not None:
            recorder.close()
            if recorder.opened:
                self.recorded_runs += 1

    @staticmethod
    def _path(recorder: LazyRecorder | None) -> str | None:
        return recorder.path if recorder is not None and recorder.opened else None


class ReplayFeed:
    mode = "replay"

    def __init__(self, recording: Recording, *, speed: float | None, instant: bool) -> None:
        self.recording = recording
        self.speed = speed if speed and speed > 0 else 1.0
        self.instant = instant
        self.now = 0.0
        self.finished = False
        self._clock: ReplayClock | None = None

    @property
    def servers(self) -> list[str]:
        for ev in self.recording.events:
            if isinstance(ev, RunStarted):
                return [str(s.get("url")) for s in ev.servers]
        return []

    def label(self) -> str:
        rec = self.recording
        created = rec.header.get("created")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) if created else "?"
        pace = "instant" if self.instant else f"×{self.speed:g}"
        cut = " · cut short" if rec.truncated else ""
        return f"{when} · {Path(rec.path).name} · {pace}{cut}"

    async def _stream(self, events: list[Event], times: list[float]) -> AsyncIterator[Event]:
        t0 = times[0] if times else 0.0
        start = time.monotonic()
        for i, (ev, t) in enumerate(zip(events, times, strict=True)):
            self.now = t
            if self._clock is not None:
                self._clock.t = t
            if self.instant:
                if i % INSTANT_CHUNK == INSTANT_CHUNK - 1:
                    await asyncio.sleep(0)
            else:
                wait = (t - t0) / self.speed - (time.monotonic() - start)
                if wait > 0.002:
                    await asyncio.sleep(wait)
            yield ev

    async def run(self, sink: Sink) -> None:
        self.finished = False
        epoch = recording_epoch(self.recording)
        for events, times in split_runs(self.recording.events, self.recording.times):
            store = sink.feed_start_run()
            store.replay = True
            clock = ReplayClock(epoch)
            store.clock = clock
            self._clock = clock
            try:
                await pump(self._stream(events, times), store, None, self._forward(sink))
            except asyncio.CancelledError:
                sink.feed_end_run(store, counted=True, recording=None)
                raise
            sink.feed_end_run(store, counted=True, recording=None)
        self.finished = True

    def _forward(self, sink: Sink):
        return sink.feed_event
