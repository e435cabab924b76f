"""`kltui monitor`: the same run as `kltui check`, as a canary probe every `--every` seconds.

Each probe is one session of the run driver (a quiet run, and with --stress its stressed pair),
recorded to its own file in the runs folder and read once by `readings/probe.read_probe` (the
shared per-server diagnosis); the monitor keeps only the last reading, to say what changed. A
dead or restarted server is a probe error, never the monitor's end; a probe that runs past
`probe_timeout` is cut short (what it measured is recorded) and counted as a timeout. The
monitor's own recordings are kept to the last `keep` probes' (older ones removed as each probe
ends), so a monitor left running for weeks does not fill its disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kltui.engines.http import Traffic
from kltui.errors import session_exit
from kltui.readings.probe import ProbeError, ProbeReading, read_probe
from kltui.readings.probe_changes import Change, Seen, Standing, changes, remember, standings
from kltui.run.config import RunConfig
from kltui.run.driver import RunDriver, RunOutcome, SessionOutcome
from kltui.session.events import Event
from kltui.session.store import SessionStore


@dataclass(frozen=True)
class ProbeResult:
    """One probe: when, how long, its load, its recording, its reading and what changed."""

    number: int
    started: float  # wall clock (time.time())
    seconds: float
    requests: int  # HTTP requests the helpers sent (the --stress traffic is the recording's)
    recording: str | None
    reading: ProbeReading
    changes: tuple[Change, ...] = ()
    # the recording of the probe the changes are against (the last that read the server)
    previous_recording: str | None = None
    error: str | None = None  # one line, for ProbeError.INTERNAL
    # settled readings said for the first time (what they rule out): said once per server
    standings: tuple[Standing, ...] = ()
    # the recording of each probe a change is against (Change.since -> its recording)
    earlier: Mapping[int, str] = field(default_factory=dict)

    def before(self, c: Change) -> str | None:
        """The recording of the probe `c` is against (None: not recorded, or removed)."""
        return self.earlier.get(c.since) if c.since is not None else None

    @property
    def exit_code(self) -> int:
        """This probe alone as `kltui check` would exit."""
        if ProbeError.INTERNAL in self.reading.errors:
            return 3
        return session_exit([self.reading.verdict], interrupted=self.reading.verdict is None)


class MonitorView(Protocol):
    """A front end of the monitor: it sees each probe begin and end."""

    def probe_started(self, number: int, at: float) -> None:
        """A probe begins (wall clock `at`)."""
        ...

    def probe_ended(self, result: ProbeResult) -> None:
        """A probe ended: its reading and what changed since the one before."""
        ...


@dataclass
class _ProbeRuns:
    """The run driver's view of one probe: a fresh store per run, nothing shown live."""

    stores: list[SessionStore] = field(default_factory=list)
    outcomes: list[RunOutcome] = field(default_factory=list)

    def start_run(self, run_no: int) -> SessionStore:
        self.stores.append(SessionStore())
        return self.stores[-1]

    def event(self, ev: Event, /) -> None:
        pass

    def run_ended(self, outcome: RunOutcome, /) -> None:
        self.outcomes.append(outcome)

    def retrying(self, seconds: int | None, attempt: int) -> None:
        pass


RecordPath = Callable[[int], str | None]

KEEP_PROBES = 288  # recordings kept by default: a day of probes at the default --every 5m
# A probe's recording, measured on the reference server (8 samples x 32 new tokens x 3 helpers:
# 84 KB; 8 x 64: 126 KB; 16 x 32: 115 KB): about this much per probe and per token scored
_RECORDING_BASE = 50_000
_RECORDING_PER_TOKEN = 55


def recording_estimate(cfg: RunConfig) -> int:
    """About how many bytes one probe's recordings take (both runs' under --stress)."""
    tokens = len(cfg.helpers) * cfg.samples * cfg.max_new_tokens
    return (_RECORDING_BASE + _RECORDING_PER_TOKEN * tokens) * (2 if cfg.stress else 1)


def probe_recordings(folder: Path, started: float | None = None) -> RecordPath:
    """Probe n's recording in `folder`: `monitor-<start>-<pid>-p<n>.kltui.jsonl`, so that one
    monitor's probes sort together and in order."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started or time.time()))
    pid = os.getpid()
    return lambda n: str(folder / f"monitor-{stamp}-{pid}-p{n:05d}.kltui.jsonl")


class Monitor:
    """Probes `cfg`'s servers every `every` seconds, `probes` times (None: until stopped)."""

    def __init__(
        self,
        cfg: RunConfig,
        *,
        every: float,
        probes: int | None = None,
        probe_timeout: float | None = None,
        record: RecordPath | None = None,
        before_probe: Callable[[], None] | None = None,
        keep: int | None = None,
    ) -> None:
        """`before_probe`: called before each probe (KLTUI_RUNS_KEEP's pruning); `keep`: the
        probes whose recordings are kept (None: all of them)."""
        self.cfg = cfg
        self.keep = keep
        self.memory: dict[str, Seen] = {}  # each server as last read (readings/probe_changes)
        self._recorded: dict[int, list[str]] = {}  # probe -> its recordings, oldest first
        self.every = every
        self.probes = probes
        self.probe_timeout = probe_timeout
        self.record = record
        self.before_probe = before_probe
        self.last: ProbeResult | None = None
        self.count = 0
        self.stopping = False  # stopped (SIGTERM, Ctrl-C) during a probe

    async def _session(self, runs: _ProbeRuns, recording: str | None) -> SessionOutcome:
        return await RunDriver(self.cfg, record=recording).session(runs, 1)

    async def probe(self) -> ProbeResult:
        """One probe, read; cancellation (SIGTERM) cuts it short (recorded, read) and sets
        `stopping`."""
        if self.before_probe is not None:
            self.before_probe()
        self.count += 1
        n, started, sent = self.count, time.time(), Traffic.requests
        recording = self.record(n) if self.record else None
        runs = _ProbeRuns()
        task = asyncio.create_task(self._session(runs, recording))
        errors: list[ProbeError] = []
        error: str | None = None
        try:
            done, _ = await asyncio.wait({task}, timeout=self.probe_timeout)
            if not done:
                task.cancel()
                errors.append(ProbeError.TIMEOUT)
            await task
        except asyncio.CancelledError:
            # SIGTERM mid-probe: the run is cut short (recorded as interrupted) and read; the
            # monitor stops once the view has it
            _uncancel()
            self.stopping = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception as e:  # noqa: BLE001 - a fault of kltui or an input file: one probe's
            errors.append(ProbeError.INTERNAL)
            error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        store = runs.stores[-1] if runs.stores else SessionStore()
        verdicts = [v for o in runs.outcomes for v in o.verdicts]
        reading = read_probe(store, tuple(errors), verdicts)
        found = changes(self.memory, reading)
        said = standings(self.memory, reading)
        self.memory = remember(self.memory, reading, n)
        written = [o.recording for o in runs.outcomes if o.recording]
        earlier = {
            c.since: self._recorded[c.since][0]
            for c in found
            if c.since is not None and self._recorded.get(c.since)
        }
        result = ProbeResult(
            number=n,
            started=started,
            seconds=time.time() - started,
            requests=Traffic.requests - sent,
            recording=written[0] if written else None,
            reading=reading,
            changes=tuple(found),
            previous_recording=next(iter(earlier.values()), None),
            error=error,
            standings=tuple(said),
            earlier=earlier,
        )
        self.last = result
        self._recorded[n] = written
        self._prune()
        return result

    def _prune(self) -> None:
        """Remove the recordings of the probes beyond `keep` (the newest kept); without
        `keep`, forget the names of those no change can be against any more."""
        if self.keep is None:
            wanted = {seen.probe for seen in self.memory.values()} | {self.count}
            for old in set(self._recorded) - wanted:
                del self._recorded[old]
            return
        for old in sorted(self._recorded)[: max(0, len(self._recorded) - self.keep)]:
            for path in self._recorded.pop(old):
                with contextlib.suppress(OSError):  # gone already, or not ours to remove
                    os.unlink(path)

    async def run(self, view: MonitorView) -> int:
        """Probe until `probes` are done (the last one's exit code) or the task is cancelled
        (SIGTERM, Ctrl-C: a clean stop, exit 0)."""
        try:
            while self.probes is None or self.count < self.probes:
                started = time.monotonic()
                view.probe_started(self.count + 1, time.time())
                result = await self.probe()
                view.probe_ended(result)
                if self.stopping:
                    return 0
                if self.probes is not None and self.count >= self.probes:
                    break
                await asyncio.sleep(max(0.0, self.every - (time.monotonic() - started)))
        except asyncio.CancelledError:  # between probes
            _uncancel()
            return 0
        return self.last.exit_code if self.last else 0


def _uncancel() -> None:
    """The stop was handled here: the running task goes on to end cleanly."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
