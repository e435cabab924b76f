"""`kltui monitor` in the app: the monitor's probe loop runs in the app's feed worker with this
feed as its view; the monitor screen (`screens/monitor.py`) shows the probes so far, and Enter
on a probe folds its recording into a store that the dashboard shows, as a replay shows one.

Only the last HISTORY probes' readings are kept (each a few hundred bytes), so the app's memory
stays flat over days; a probe's store is folded from its recording when it is opened, and
dropped when another is.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

from kltui.run.monitor import Monitor, ProbeResult
from kltui.run.reopen import NotFetched, replay_extras
from kltui.session.events import Event
from kltui.session.fold import fold
from kltui.session.recording import RecordingError, read_recording
from kltui.session.store import HelperState, SessionStore
from kltui.tui.unwind import unwound

HISTORY = 240  # probes kept for the screen (a day at --every 6m)


class MonitorSink(Protocol):
    """What the feed drives: the app, through its monitor actions (`tui/monitor_actions.py`)."""

    def open_monitor(self) -> None:
        """The monitor screen, on top."""

    def monitor_note(self, line: str) -> None:
        """A change of reading, said as it happens."""


class MonitorFeed:
    """A running monitor for the app."""

    mode = "live"

    def __init__(
        self,
        monitor: Monitor,
        metrics: object | None = None,
        listen: str | None = None,
        notes: list[str] | None = None,
    ):
        """`notes`: said once as the monitor starts (what it keeps)."""
        self.monitor = monitor
        self.notes = notes or []
        self.metrics = metrics  # outputs/prometheus.MonitorMetrics, fed as the console feeds it
        self.listen = listen  # where /metrics is served, for the screen's head line
        self.history: deque[ProbeResult] = deque(maxlen=HISTORY)
        self.running: int | None = None  # the probe going on now
        self.sink: MonitorSink | None = None
        self.shown: int | None = None  # the probe whose store the dashboard shows
        self.version = 0
        self.finished = False
        self._begun = False
        self._done: asyncio.Event | None = None

    # ------------------------------------------------------------------ what the app reads
    @property
    def cfg(self):
        """The run every probe makes."""
        return self.monitor.cfg

    @property
    def servers(self) -> list[str]:
        """The servers probed."""
        return list(self.monitor.cfg.servers) or [self.monitor.cfg.router or ""]

    def result(self, number: int) -> ProbeResult | None:
        """A probe still in the history, by number."""
        return next((r for r in self.history if r.number == number), None)

    def store_of(self, number: int) -> tuple[SessionStore | None, str]:
        """A probe's store, folded from its recording, or why there is none."""
        r = self.result(number)
        if r is None:
            return None, "no longer in the history"
        if r.recording is None:
            return None, "not recorded (--no-record)"
        try:
            stores = fold(read_recording(r.recording))
        except (OSError, RecordingError) as e:  # pruned by KLTUI_RUNS_KEEP, or unreadable
            return None, f"its recording cannot be read ({e})"
        return stores[-1], ""

    async def fetch_opened(
        self, store: SessionStore, st: HelperState, sample: int, around: int | None
    ) -> list[Event]:
        """Top-k and text of a sample of a probe: asked of its recorded server, as a replay
        asks (the server is the one being monitored)."""
        if store.run is None:
            raise NotFetched("the probe's recording has no run")
        return await replay_extras(store.run, st, sample, around)

    # ------------------------------------------------------------------ the feed
    async def run(self, sink: MonitorSink) -> None:
        """The probe loop (once), its screen on top."""
        self.sink = sink
        if self._begun:
            return
        self._begun = True
        self._done = asyncio.Event()
        sink.open_monitor()
        for line in self.notes:
            sink.monitor_note(line)
        try:
            await self.monitor.run(self)
        finally:
            self.finished = True
            self.running = None
            self.version += 1
            self._done.set()

    async def settled(self, timeout: float) -> bool:
        """Wait until the probe loop has unwound (its worker cancelled)."""
        return await unwound(self._done, timeout)

    # ------------------------------------------------------------------ run/monitor.MonitorView
    def probe_started(self, number: int, at: float) -> None:
        """A probe begins."""
        self.running = number
        self.version += 1

    def probe_ended(self, result: ProbeResult) -> None:
        """A probe ended: into the history, the metrics, and a note for each change."""
        if self.metrics is not None:
            self.metrics.probe_ended(result)  # type: ignore[attr-defined]
        self.history.append(result)
        self.running = None
        self.version += 1
        if self.sink is not None and (result.changes or result.standings):
            from kltui.words.probe import change_words, standing_words

            for st in result.standings:  # said once per server
                self.sink.monitor_note(standing_words(st))
            for c in result.changes:
                self.sink.monitor_note(change_words(c, result.started + result.seconds))
