"""A `kltui ablate` sweep into the app: the sweep's own view (`run/ablate.SweepView`) fills the
matrix of configurations (`screens/ablation.py`), and each configuration's run goes to the
dashboard as a normal live run does.

Live: `run_sweep` runs in the app's feed worker with this feed as its view. What the sweep says
of a configuration (starting with its seconds and log line, up, its run's events, ended) is kept
per configuration (`outputs/ablation_matrix.Live`); when one ends, the sweep's reading
(`Sweep.reading`, readings/ablation.py) is taken again. The matrix only shows these. The dashboard
follows the configuration being measured until the user opens another (Enter on its row).

Replay: a sweep folder read back (`run/sweep_manifest.load`: every store folded from its recording),
the matrix filled at once; Enter opens a configuration's dashboard on its recording.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from kltui.ablate.plan import Config, Plan
from kltui.ablate.sweep import ConfigRun, Sweep
from kltui.outputs.ablation_matrix import RUNNING, STARTING, Live
from kltui.readings.ablation import Ablation
from kltui.readings.ablation_outcome import reading
from kltui.readings.stress import StressReading
from kltui.run.ablate import SweepSpec, run_sweep
from kltui.run.driver import RunOutcome
from kltui.run.reopen import NotFetched, replay_extras
from kltui.session.events import Event
from kltui.session.store import HelperState, SessionStore
from kltui.tui.unwind import unwound
from kltui.words.stress import stress_json

ENDED = "ended"


class SweepSink(Protocol):
    """What the feed drives: the app, through its sweep actions (`tui/sweep_actions.py`)."""

    store: SessionStore | None

    def feed_event(self, event: Event) -> None:
        """One event of the run the dashboard shows, already applied to its store."""

    def show_configuration(self, name: str, store: SessionStore, *, running: bool) -> None:
        """The dashboard on one configuration's store."""

    def shown_run_ended(self, store: SessionStore) -> None:
        """The run the dashboard shows has ended."""

    def open_matrix(self) -> None:
        """The matrix of configurations, on top."""

    def sweep_note(self, line: str) -> None:
        """A line the sweep says beyond its configurations (the chain's steps)."""


class _ConfigView:
    """One configuration's run (a `run/driver.RunView`): its own store, and the dashboard's
    when the dashboard follows it."""

    def __init__(self, feed: SweepFeed, name: str) -> None:
        self.feed, self.name = feed, name
        self.store: SessionStore | None = None

    def start_run(self, run_no: int) -> SessionStore:
        """A fresh store, kept for the matrix; the dashboard's when it follows the sweep."""
        self.store = SessionStore()
        self.feed.live.setdefault(self.name, Live()).store = self.store
        if self.feed.follow and self.feed.sink is not None:
            self.feed.shown = self.name
            self.feed.sink.show_configuration(self.name, self.store, running=True)
        self.feed.changed()
        return self.store

    def event(self, ev: Event) -> None:
        """One event: to the dashboard while it shows this configuration; the matrix's row
        shows its progress (redrawn a few times a second at most, whatever the event rate)."""
        self.feed.changed()
        sink = self.feed.sink
        if sink is not None and self.store is not None and sink.store is self.store:
            sink.feed_event(ev)

    def run_ended(self, outcome: RunOutcome) -> None:
        """The run's end: the dashboard says so when it shows it."""
        sink = self.feed.sink
        if sink is not None and self.store is not None and sink.store is self.store:
            sink.shown_run_ended(self.store)

    def retrying(self, seconds: int | None, attempt: int) -> None:
        """Never asked: a sweep's runs do not retry connecting."""


class SweepFeed:
    """A sweep for the app: live (`SweepFeed(spec, plan=...)` or `configs=` in attach mode) or
    read back (`SweepFeed.replay(sweep)`)."""

    def __init__(
        self,
        spec: SweepSpec | None,
        *,
        plan: Plan | None = None,
        configs: tuple[Config, ...] | None = None,
        help_s: float = 0.0,
        t0: float | None = None,
        chain: bool = False,
        loaded: Sweep | None = None,
    ) -> None:
        self.spec, self.plan, self.configs = spec, plan, configs
        self.help_s, self.t0, self.chain = help_s, t0, chain
        self.mode = "replay" if loaded is not None else "live"
        self.sweep: Sweep | None = loaded
        self.ab: Ablation | None = reading(loaded) if loaded is not None else None
        self.live: dict[str, Live] = {}
        self.notes: list[str] = []  # the chain's lines
        self.sink: SweepSink | None = None
        self.shown: str | None = None  # the configuration the dashboard shows
        self.follow = True  # the dashboard follows the configuration being measured
        self._begun = False  # the feed runs once: a sweep is never re-run from the TUI
        self._done: asyncio.Event | None = None  # set once a live sweep has unwound
        self.finished = loaded is not None
        self.version = 0  # moves on every change the matrix shows

    @classmethod
    def replay(cls, sweep: Sweep) -> SweepFeed:
        """A sweep folder read back (`run/sweep_manifest.load`)."""
        return cls(None, loaded=sweep)

    # ------------------------------------------------------------------ what the app reads
    @property
    def cfg(self):
        """The run options every configuration shares (None for a replay)."""
        return self.spec.cfg if self.spec is not None else None

    @property
    def servers(self) -> list[str]:
        """The server of the configuration shown."""
        run = self.run_of(self.shown) if self.shown else None
        return [run.url] if run is not None and run.url else []

    def run_of(self, name: str | None) -> ConfigRun | None:
        """A configuration of the sweep by name."""
        runs = self.sweep.runs if self.sweep is not None else []
        return next((r for r in runs if r.name == name), None)

    def store_of(self, name: str) -> SessionStore | None:
        """What the dashboard shows of a configuration: its store once measured, else what
        its run measured so far (a run cut short or whose server died: not a result, shown)."""
        run = self.run_of(name)
        if run is not None and run.store is not None:
            return run.store
        live = self.live.get(name)
        return live.store if live is not None else None

    def changed(self) -> None:
        """Something the matrix shows moved."""
        self.version += 1

    async def fetch_opened(
        self, store: SessionStore, st: HelperState, sample: int, around: int | None
    ) -> list[Event]:
        """Top-k and text of a sample opened after its run: a replay asks its recorded server
        (while it answers with the recorded model and prompts); live, the configuration's
        server was stopped once it was measured."""
        if self.mode == "replay" and store.run is not None:
            return await replay_extras(store.run, st, sample, around)
        raise NotFetched(
            "kltui ablate stops each configuration's server once it is measured, so nothing "
            "can be fetched from it"
        )

    # ------------------------------------------------------------------ the feed
    async def run(self, sink: SweepSink) -> None:
        """The sweep (once: it is never re-run from the TUI), its matrix on top."""
        self.sink = sink
        if self._begun or self.mode == "replay":
            if not self._begun:
                self._begun = True
                sink.open_matrix()
            return
        self._begun = True
        spec = self.spec
        if spec is None:
            return
        self._done = asyncio.Event()
        sink.open_matrix()
        try:
            sweep = await run_sweep(
                spec,
                self,
                configs=self.configs if self.plan is None else None,
                p=self.plan,
                help_s=self.help_s,
                t0=self.t0,
            )
            if self.chain and not sweep.interrupted:
                await self._chain(spec, sweep)
        finally:
            self.finished = True
            if self.sweep is not None:
                self.ab = reading(self.sweep)
            self.changed()
            self._done.set()

    async def settled(self, timeout: float) -> bool:
        """Wait until the sweep has unwound (after its worker was cancelled: every server
        stopped, every configuration's status set); False when it took longer than
        `timeout` seconds."""
        return await unwound(self._done, timeout)

    async def _chain(self, spec: SweepSpec, sweep: Sweep) -> None:
        """`--chain` after the sweep: setting -> module -> op, its lines under the matrix."""
        from kltui.dumps.chain import chain_into
        from kltui.words.chain import progress_line
        from kltui.words.dumps import verdict_words

        await chain_into(
            spec, sweep, _Quiet(), say=lambda p: self._note(progress_line(p)), words=verdict_words
        )

    def _note(self, line: str) -> None:
        self.notes.append(line)
        if self.sink is not None:
            self.sink.sweep_note(line)
        self.changed()

    # ------------------------------------------------------------------ run/ablate.SweepView
    def planned(self, sweep: Sweep) -> None:
        """The configurations are known (again after --pairs adds some): a row each."""
        self.sweep = sweep
        for r in sweep.runs:
            self.live.setdefault(r.name, Live())
        self.changed()

    def starting(self, k: int, n: int, run: ConfigRun) -> None:
        """Its server is being started."""
        self.live.setdefault(run.name, Live()).phase = STARTING
        self.changed()

    def progress(self, k: int, n: int, run: ConfigRun, seconds: float, line: str) -> None:
        """Seconds so far and its log's last line."""
        lv = self.live.setdefault(run.name, Live())
        lv.seconds, lv.log_line = seconds, line
        self.changed()

    def started(self, k: int, n: int, run: ConfigRun) -> None:
        """Its server answers (or, attached, its helpers begin)."""
        self.live.setdefault(run.name, Live()).phase = RUNNING
        self.changed()

    def run_view(self, k: int, n: int, run: ConfigRun) -> _ConfigView:
        """The view of its helpers' run."""
        return _ConfigView(self, run.name)

    def stress_json(self, reading: StressReading) -> dict:
        """The --stress reading as the manifest keeps it."""
        return stress_json(reading)

    def ended(self, k: int, n: int, run: ConfigRun) -> None:
        """Measured or failed: the reading is taken again with it."""
        self.live.setdefault(run.name, Live()).phase = ENDED
        if self.sweep is not None:
            self.ab = reading(self.sweep)
        self.changed()


class _Quiet:
    """The chain's own match run: recorded in the sweep folder, not shown on the dashboard."""

    def start_run(self, run_no: int) -> SessionStore:
        """A store of its own."""
        return SessionStore()

    def event(self, ev: Event) -> None:
        """Not shown."""

    def run_ended(self, outcome: RunOutcome) -> None:
        """Not shown."""

    def retrying(self, seconds: int | None, attempt: int) -> None:
        """Never asked."""
