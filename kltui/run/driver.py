"""The one driver of a session: every front end (`kltui check`'s console, the TUI, `kltui web`'s
dashboards, the fleet mode) runs its measurements through `RunDriver` and only *views* them.

A session is one or more runs of `run_session` (`--repeat`, the TUI's re-run and `--watch`),
each pumped into a fresh `SessionStore`, recorded (the n-th run to `NAME-N.kltui.jsonl`, see
`nth_recording`) and shown by a `RunView`. Several servers in one run are measured up to
`RunConfig.concurrency` at once (`run/merge.py`): their events come as one stream, each event
naming its server, and a server that fails does not stop the others.

The API, for a new front end:

    driver = RunDriver(cfg, record="x.kltui.jsonl")
    outcome = await driver.session(view, repeat=3)   # or: await driver.run(view), once per run
    sys.exit(outcome.exit_code)

where `view` implements `RunView` (start_run, event, run_ended, retrying).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kltui.engines.identity import ServerIdentity
from kltui.errors import session_exit
from kltui.helpers.phases import Run
from kltui.readings.compare import RerunChain, RerunEquality
from kltui.readings.stress import StressReading, is_stressed
from kltui.readings.stress import read as read_stress
from kltui.run.config import RunConfig
from kltui.run.runner import BeforeFlush, run_session
from kltui.session.consume import pump
from kltui.session.events import Event, Problem, RunFinished, RunStarted
from kltui.session.recording import Recorder
from kltui.session.store import SessionStore

RETRY_FIRST_S = 1
RETRY_MAX_S = 30
RECORDING_SUFFIXES = (".kltui.jsonl", ".jsonl")


def nth_recording(base: str | None, n: int) -> str | None:
    """The recording of a session's n-th run: run 1 keeps the name given, run n records to
    `NAME-n.kltui.jsonl` beside it (the one rule for `--repeat`, re-runs and `--watch`)."""
    if base is None or n <= 1:
        return base
    p = Path(base)
    for suffix in RECORDING_SUFFIXES:
        if p.name.endswith(suffix):
            return str(p.with_name(f"{p.name[: -len(suffix)]}-{n}{suffix}"))
    return str(p.with_name(f"{p.stem}-{n}{p.suffix}"))


def connect_failed(store: SessionStore) -> bool:
    """The run never reached a server: every server errored while connecting."""
    run = store.run
    if run is None:
        return any(p.phase == "connect" for p in store.problems)
    servers = store.identities()
    return bool(servers) and all(s.error for s in servers)


class LazyRecorder:
    """Opens the recording only once the run measured something or got past connecting: an
    attempt that is retried is dropped unwritten (`RunDriver.run` keeps the last one), so a
    server that stays down for an hour of retries leaves one recording, not hundreds."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._rec: Recorder | None = None
        self._buffer: list[Event] = []
        self._servers_ok = False

    @property
    def opened(self) -> bool:
        """Whether the recording file exists (something worth keeping was written)."""
        return self._rec is not None

    def _open(self) -> None:
        self._rec = Recorder(self.path)
        for ev in self._buffer:
            self._rec.write(ev)
        self._buffer.clear()

    def write(self, ev: Event) -> None:
        """Records one event, or keeps it until the run has shown it is worth a file."""
        if self._rec is not None:
            self._rec.write(ev)
            return
        self._buffer.append(ev)
        if isinstance(ev, RunStarted):
            self._servers_ok = any(not ServerIdentity.of(s).error for s in ev.servers)
        elif isinstance(ev, RunFinished):
            if self._servers_ok:
                self._open()
        elif not isinstance(ev, Problem):
            self._open()

    def close(self) -> None:
        """Ends the recording, writing what was kept: the session's last attempt is recorded
        even when it never reached a server, as `kltui check` records it."""
        if self._rec is None and self._buffer:
            self._open()
        if self._rec is not None:
            self._rec.close()


@dataclass
class RunOutcome:
    """How one run of a session ended: its store, where it was recorded, and why it stopped."""

    run_no: int
    store: SessionStore
    recording: str | None = None
    interrupted: bool = False
    # the run reached a server (a failed connection that is retried does not count)
    counted: bool = True
    # a fault of kltui or of an input file that ended the run (re-raised by `session`)
    error: BaseException | None = None
    # bit equality with the session's previous run (session/compare.rerun_equality), if any
    equality: RerunEquality | None = None
    # --stress: the stressed run against the quiet one before it (readings/stress.py)
    stress: StressReading | None = None

    @property
    def verdict(self) -> str | None:
        """The run's verdict (pass, fail, error, interrupted), None if it never finished."""
        return self.store.finished.verdict if self.store.finished else None

    @property
    def verdicts(self) -> list[str | None]:
        """The run's verdict, and "fail" for a state bug under --stress (its quiet run and
        its stressed run may both pass their gates)."""
        return [self.verdict] + (["fail"] if self.stress and self.stress.state_bug else [])

    @property
    def exit_code(self) -> int:
        """This run alone as a process exit code."""
        return session_exit(self.verdicts, interrupted=self.interrupted)


@dataclass
class SessionOutcome:
    """Every run of a session and the exit code they add up to (errors.session_exit)."""

    runs: list[RunOutcome] = field(default_factory=list)
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        """The process exit code: 130 when interrupted, else the worst run's."""
        return session_exit(
            [v for r in self.runs for v in r.verdicts], interrupted=self.interrupted
        )

    @property
    def last(self) -> RunOutcome | None:
        """The last run (the one the reports describe)."""
        return self.runs[-1] if self.runs else None


class RunView(Protocol):
    """A front end of the driver: it owns the store it shows and sees every event of a run."""

    def start_run(self, run_no: int) -> SessionStore:
        """A run begins: the (fresh) store its events are folded into."""
        ...

    def event(self, ev: Event, /) -> None:
        """One event, after the recorder wrote it and the store applied it."""
        ...

    def run_ended(self, outcome: RunOutcome, /) -> None:
        """The run ended (finished, interrupted, failed to connect or broke)."""
        ...

    def retrying(self, seconds: int | None, attempt: int) -> None:
        """No server answered: the next attempt in `seconds` (None: it starts now)."""
        ...


EventSource = Callable[[], AsyncIterator[Event]]


class RunDriver:
    """Runs a session's runs for one `RunConfig` and hands each to a `RunView`."""

    def __init__(
        self,
        cfg: RunConfig,
        *,
        record: str | None = None,
        live_view: bool = False,
        before_flush: BeforeFlush | None = None,
        lazy_record: bool = False,
        retry_connect: bool = False,
        keep_runs: bool = False,
    ) -> None:
        """`record`: run 1's recording (later runs: `nth_recording`); `live_view`: something
        shows the decode as it happens (streamed requests); `lazy_record`: no file for a run
        that never reached a server; `retry_connect`: while no server answers, retry after
        1, 2, 4 ... 30 s (the TUI) instead of ending the run; `keep_runs`: each run's helper
        runs that may fetch drill-down extras later are kept in `kept` (the TUI's opened
        samples)."""
        self.cfg = cfg
        self.record = record
        self.live_view = live_view
        self.before_flush = before_flush
        self.lazy_record = lazy_record
        self.retry_connect = retry_connect
        self.keep_runs = keep_runs
        self.kept: list[Run] | None = None  # the last run's helper runs (with keep_runs)
        self.recorded = 0  # runs written to a recording so far (names the next one)
        self.reruns = RerunChain()  # the runs that reached a server so far, compared
        self._current: RunOutcome | None = None  # the run going on now (or the last one)
        # the last attempt that failed to connect and is retried: recorded only if the session
        # ends before the next attempt (so a dead server leaves the recording `check` leaves)
        self._pending: LazyRecorder | None = None
        # the session going on now: what ran so far, also when a fault ends it
        self.outcome = SessionOutcome()
        self._quiet: SessionStore | None = None  # --stress: the quiet run waiting for its pair

    @property
    def stress_next(self) -> bool:
        """With --stress, whether the next run is the stressed one (runs alternate: quiet,
        stressed, quiet, ...; each stressed run is read against the quiet one before it)."""
        return bool(self.cfg.stress) and self._quiet is not None

    def events(self) -> AsyncIterator[Event]:
        """One run's event stream (run_session with this driver's settings)."""
        self.kept = [] if self.keep_runs else None
        cfg = dataclasses.replace(self.cfg, stressed=True) if self.stress_next else self.cfg
        return run_session(cfg, self.before_flush, live_view=self.live_view, keep=self.kept)

    def _recorder(self) -> LazyRecorder | Recorder | None:
        path = nth_recording(self.record, self.recorded + 1)
        if path is None:
            return None
        return LazyRecorder(path) if self.lazy_record else Recorder(path)

    def _close(self, recorder: LazyRecorder | Recorder | None) -> str | None:
        """Closes the run's recorder; the recording's path if one was written."""
        if recorder is None:
            return None
        recorder.close()
        if isinstance(recorder, LazyRecorder) and not recorder.opened:
            return None
        self.recorded += 1
        return str(recorder.path)

    async def _attempt(self, view: RunView, source: EventSource) -> RunOutcome:
        """One attempt at a run: pumped into the view's store, recorded, ended in the view."""
        self._pending = None  # this attempt's recording takes its place
        recorder = self._recorder()  # an unwritable recording fails here, before the view
        store = view.start_run(self.runs + 1)
        outcome = self._current = RunOutcome(self.runs + 1, store)
        try:
            await pump(source(), store, recorder, view.event)
        except asyncio.CancelledError:
            outcome.interrupted = True
            outcome.recording = self._close(recorder)
            self._count(outcome)
            view.run_ended(outcome)
            raise
        except Exception as e:  # noqa: BLE001 - the view says what broke; session re-raises
            outcome.error = e
            outcome.recording = self._close(recorder)
            outcome.counted = store.run is not None
            self._count(outcome)
            view.run_ended(outcome)
            return outcome
        outcome.counted = not (self.retry_connect and connect_failed(store))
        if not outcome.counted and isinstance(recorder, LazyRecorder) and not recorder.opened:
            self._pending = recorder  # retried: written only if the session ends first
        else:
            outcome.recording = self._close(recorder)
        self._count(outcome)
        view.run_ended(outcome)
        return outcome

    @property
    def runs(self) -> int:
        """Runs that reached a server so far."""
        return self.reruns.runs

    def _count(self, outcome: RunOutcome) -> None:
        """A run that reached a server takes its number, compared with the one before."""
        if outcome.counted:
            outcome.equality = self.reruns.add(outcome.store)
            self._pair(outcome)

    def _pair(self, outcome: RunOutcome) -> None:
        """--stress: a quiet run waits for its stressed one, which is read against it."""
        if not self.cfg.stress:
            return
        store = outcome.store
        if is_stressed(store):
            if self._quiet is not None and store.finished and self._quiet.finished:
                outcome.stress = read_stress(self._quiet, store, self.cfg.stress)
            self._quiet = None
        else:
            self._quiet = store if store.finished else None

    async def run(self, view: RunView, events: EventSource | None = None) -> RunOutcome:
        """One run (with `retry_connect`: retried until a server answers); cancellation ends it
        as interrupted and propagates."""
        source = events or self.events
        delay, attempt = RETRY_FIRST_S, 0
        run_id: str | None = None  # a retried run keeps its first attempt's id
        while True:
            outcome = await self._attempt(view, _with_run_id(source, run_id))
            if outcome.counted or outcome.error is not None or not self.retry_connect:
                return outcome
            if run_id is None and outcome.store.run is not None:
                run_id = outcome.store.run.run_id
            try:
                for remaining in range(delay, 0, -1):
                    view.retrying(remaining, attempt)
                    await asyncio.sleep(1)
            except asyncio.CancelledError:
                if self._pending is not None:
                    outcome.recording = self._close(self._pending)
                    self._pending = None
                raise
            view.retrying(None, attempt)
            attempt += 1
            delay = min(RETRY_MAX_S, delay * 2)

    async def session(self, view: RunView, repeat: int = 1) -> SessionOutcome:
        """`repeat` runs, one after the other; Ctrl-C (a cancellation of the running task) ends
        the session as interrupted instead of propagating. A fault that broke a run is
        re-raised once the view has ended it."""
        out = self.outcome = SessionOutcome()
        # --stress: each repeat is a quiet run and a stressed one
        for _ in range(repeat * (2 if self.cfg.stress else 1)):
            try:
                outcome = await self.run(view)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                out.interrupted = True
                if self._current is not None and self._current not in out.runs:
                    out.runs.append(self._current)
                break
            out.runs.append(outcome)
            if outcome.error is not None:
                raise outcome.error
        return out


def _with_run_id(source: EventSource, run_id: str | None) -> EventSource:
    """`source` with its RunStarted under `run_id` (None: as the runner made it), so that
    the attempts of one retried run read as one run in the view and the recording."""
    if run_id is None:
        return source

    async def events() -> AsyncIterator[Event]:
        inner = source()
        try:
            async for ev in inner:
                yield dataclasses.replace(ev, run_id=run_id) if isinstance(ev, RunStarted) else ev
        finally:
            # the runner closes its clients when its generator ends, not when it is dropped
            close = getattr(inner, "aclose", None)
            if close is not None:
                await close()

    return events


@contextlib.contextmanager
def cancel_on_signals() -> Iterator[None]:
    """Within a running task: SIGINT and SIGTERM cancel it (a clean end as `interrupted`, exit
    130) instead of raising KeyboardInterrupt wherever the code happens to be."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    installed = []
    if task is not None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, task.cancel)
                installed.append(sig)
            except (NotImplementedError, RuntimeError):
                pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


__all__ = [
    "LazyRecorder",
    "RunDriver",
    "RunOutcome",
    "RunView",
    "SessionOutcome",
    "cancel_on_signals",
    "connect_failed",
    "nth_recording",
]
