"""The one fold of a recording into stores: every reader of a recording (`kltui report`,
`kltui replay --headless`, the TUI's replay) splits it into runs and times it the same way.

A recording appended to by two runs holds two RunStarted; each run gets a store of its own.
A store folded from a recording runs on the recording's clock (header `created` plus each
line's `t`), so helper durations are the recorded ones, not the time it took to read the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kltui.session.events import Event, RunStarted
from kltui.session.recording import Recording
from kltui.session.store import SessionStore


def split_runs(events: list[Event], times: list[float]) -> list[tuple[list[Event], list[float]]]:
    """(events, times) of each run, in recording order."""
    runs: list[tuple[list[Event], list[float]]] = []
    for ev, t in zip(events, times, strict=False):
        if isinstance(ev, RunStarted) or not runs:
            runs.append(([], []))
        runs[-1][0].append(ev)
        runs[-1][1].append(t)
    return runs


def recording_epoch(rec: Recording) -> float:
    """Wall-clock time of a recording's t = 0 (0 when the header does not say)."""
    created = rec.header.get("created")
    return float(created) if isinstance(created, int | float) else 0.0


class ReplayClock:
    """The clock of a replayed store: the recording's time of the event being applied."""

    def __init__(self, epoch: float) -> None:
        self.epoch, self.t = epoch, 0.0

    def __call__(self) -> float:
        return self.epoch + self.t


@dataclass
class RecordedRun:
    """One run of a recording, to be folded into a store on the recording's clock."""

    events: list[Event]
    times: list[float]
    clock: ReplayClock

    def bind(self, store: SessionStore) -> SessionStore:
        """`store`, made a replay on this run's clock."""
        store.replay = True
        store.clock = self.clock
        return store

    def timed(self) -> Iterator[tuple[Event, float]]:
        """Each event with its recorded time; the clock reads that time while it is applied."""
        for ev, t in zip(self.events, self.times, strict=True):
            self.clock.t = t
            yield ev, t


def recorded_runs(rec: Recording) -> list[RecordedRun]:
    """Every run of `rec` in recording order, each with its own clock."""
    epoch = recording_epoch(rec)
    return [RecordedRun(ev, t, ReplayClock(epoch)) for ev, t in split_runs(rec.events, rec.times)]


def fold(
    rec: Recording, on_run: Callable[[SessionStore], Callable[[Event], None] | None] | None = None
) -> list[SessionStore]:
    """One store per run of `rec` (one empty store for a recording without events).

    `on_run(store)` may return a callback that sees each event after the store applied it
    (the headless replay prints as it folds)."""
    stores = []
    runs = recorded_runs(rec) or [RecordedRun([], [], ReplayClock(recording_epoch(rec)))]
    for run in runs:
        store = run.bind(SessionStore())
        seen = on_run(store) if on_run is not None else None
        for ev, _t in run.timed():
            store.apply(ev)
            if seen is not None:
                seen(ev)
        stores.append(store)
    return stores
