"""Where the app's events come from: live runs (through the one run driver, run/driver.py) or
a recording (folded as session/fold.py folds every recording; the replay only adds pacing).

Both go through `consume.pump`, so the store, the recorder and the views see one stream in one
order whether it is live or replayed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

from kltui.engines.identity import ServerIdentity
from kltui.helpers.extras import for_opened
from kltui.helpers.phases import Run
from kltui.readings.compare import RerunChain, RerunEquality
from kltui.run.config import RunConfig
from kltui.run.driver import RunDriver, RunOutcome
from kltui.run.reopen import NotFetched, replay_extras
from kltui.session.consume import pump
from kltui.session.events import Event, RunStarted
from kltui.session.fold import RecordedRun, recorded_runs
from kltui.session.recording import Recording
from kltui.session.store import HelperState, SessionStore

INSTANT_CHUNK = 2000  # events applied between yields to the UI in an instant replay


class Sink(Protocol):
    """What a feed drives (the app)."""

    def feed_start_run(self) -> SessionStore:
        """A run starts: the fresh store its events fold into."""

    def feed_event(self, event: Event) -> None:
        """One event, already applied to the store."""

    def feed_end_run(
        self,
        store: SessionStore,
        *,
        counted: bool,
        recording: str | None,
        equality: RerunEquality | None = None,
    ) -> None:
        """The run ended (counted: it goes into the history), recorded at `recording`, with its
        bit equality with the run before (session/compare.RerunChain) if both finished."""

    def feed_retry(self, seconds: int | None, attempt: int) -> None:
        """No server answered: the next attempt in `seconds` (None: it starts now)."""

    def feed_error(self, message: str) -> None:
        """The run could not go on, for this reason."""

    async def confirm_flush(self, client) -> bool:
        """Whether the user lets the run flush this server's cache."""


class SinkView:
    """The app as a view of the run driver (`run/driver.RunView`): the Sink's calls, in the
    order the dashboard expects (a broken run's error before its end)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink

    def start_run(self, run_no: int) -> SessionStore:
        """The app's fresh store for the run."""
        return self.sink.feed_start_run()

    def event(self, ev: Event) -> None:
        """One event, to the app."""
        self.sink.feed_event(ev)

    def run_ended(self, outcome: RunOutcome) -> None:
        """The run's end (a failed connection that is retried does not count as a run)."""
        if outcome.error is not None:
            self.sink.feed_error(f"{type(outcome.error).__name__}: {outcome.error}")
        self.sink.feed_end_run(
            outcome.store,
            counted=outcome.counted,
            recording=outcome.recording,
            equality=outcome.equality,
        )
        if outcome.stress is not None:  # --stress: the pair is complete, side by side
            from kltui.tui.screens.stress import StressScreen

            push = getattr(self.sink, "push_screen", None)
            if push is not None:
                push(StressScreen(outcome.stress, getattr(self.sink, "theme_variables", {})))

    def retrying(self, seconds: int | None, attempt: int) -> None:
        """The countdown to the next connection attempt."""
        self.sink.feed_retry(seconds, attempt)


class LiveFeed:
    """Live runs for the app, through the one run driver: each `run` is one run (the first,
    a re-run or --watch's), retried while no server answers, recorded as `NAME-N.kltui.jsonl`."""

    mode = "live"

    def __init__(self, cfg: RunConfig, record: str | None) -> None:
        self.cfg = cfg
        self.driver = RunDriver(
            cfg, record=record, live_view=True, lazy_record=True, retry_connect=True, keep_runs=True
        )

    @property
    def servers(self) -> list[str]:
        """The servers the runs measure (a fleet run: its router, until it names the workers)."""
        return list(self.cfg.servers) or ([self.cfg.router] if self.cfg.router else [])

    async def run(self, sink: Sink) -> None:
        """One run; while no server answers, retry after 1, 2, 4 ... 30 s with a countdown."""
        self.driver.before_flush = getattr(sink, "confirm_flush", None)
        await self.driver.run(SinkView(sink))
        if self.driver.stress_next:  # --stress: the quiet run's stressed pair follows it
            await self.driver.run(SinkView(sink))

    @property
    def runs(self) -> list[Run]:
        """The last run's helper runs: what a sample opened after it needs for its extras."""
        return self.driver.kept or []

    async def fetch_opened(
        self, store: SessionStore, st: HelperState, sample: int, around: int | None
    ) -> list[Event]:
        """Top-k and text of a sample opened after the run (one bounded request); NotFetched
        when this run kept nothing for that helper (no extras, or run by other means)."""
        run = next(
            (r for r in self.runs if r.helper == st.helper and r.ctx.server == st.server), None
        )
        if run is None:
            raise NotFetched("this helper's inputs were not kept, so nothing was fetched")
        cfg = self.cfg
        return await for_opened(
            run, sample, around, cfg.top_k, cfg.server_api_key(), cfg.request_timeout
        )


class ReplayFeed:
    """A recording replayed into the app at a speed (or at once), run by run."""

    mode = "replay"

    def __init__(self, recording: Recording, *, speed: float | None, instant: bool) -> None:
        self.recording = recording
        self.speed = speed if speed and speed > 0 else 1.0
        self.instant = instant
        self.now = 0.0
        self.finished = False

    @property
    def servers(self) -> list[str]:
        """The servers of the recording's first run."""
        for ev in self.recording.events:
            if isinstance(ev, RunStarted):
                return [str(ServerIdentity.of(s).url) for s in ev.servers]
        return []

    async def fetch_opened(
        self, store: SessionStore, st: HelperState, sample: int, around: int | None
    ) -> list[Event]:
        """Top-k and text of a replayed sample from its recorded server, while it answers and
        serves the recorded model and prompts (one bounded request); NotFetched otherwise."""
        if store.run is None:
            raise NotFetched("the recording has no run start, so its server is unknown")
        return await replay_extras(store.run, st, sample, around)

    def label(self) -> str:
        """When, which file and how fast, for the status bar."""
        rec = self.recording
        created = rec.header.get("created")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) if created else "?"
        pace = "instant" if self.instant else f"×{self.speed:g}"
        if not self.instant and self.speed == 1.0:
            pace = "×1 real time"
        cut = " · cut short" if rec.truncated else ""
        return f"{when} · {Path(rec.path).name} · {pace}{cut}"

    async def _paced(self, run: RecordedRun) -> AsyncIterator[Event]:
        """The run's events at the replay's speed (the fold sets the clock; this only waits)."""
        t0 = run.times[0] if run.times else 0.0
        start = time.monotonic()
        for i, (ev, t) in enumerate(run.timed()):
            self.now = t
            if self.instant:
                if i % INSTANT_CHUNK == INSTANT_CHUNK - 1:
                    await asyncio.sleep(0)
            else:
                wait = (t - t0) / self.speed - (time.monotonic() - start)
                if wait > 0.002:
                    await asyncio.sleep(wait)
            yield ev

    async def run(self, sink: Sink) -> None:
        """Every run of the recording, one after the other, into the app."""
        self.finished = False
        reruns = RerunChain()  # compared as the run driver compares live runs
        for run in recorded_runs(self.recording):
            store = run.bind(sink.feed_start_run())
            try:
                await pump(self._paced(run), store, None, sink.feed_event)
            except asyncio.CancelledError:
                sink.feed_end_run(store, counted=True, recording=None, equality=reruns.add(store))
                raise
            sink.feed_end_run(store, counted=True, recording=None, equality=reruns.add(store))
        self.finished = True
