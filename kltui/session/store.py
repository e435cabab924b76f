"""SessionStore: the single source of truth that every consumer (TUI, headless, reports) reads.

It only folds events; every number it holds comes from `metrics.k3.ScoreBook` or from the events.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from kltui.engines.identity import ServerIdentity, as_bool, as_float, as_int, identity_of
from kltui.metrics.k3 import DEFAULT_TAIL_THRESHOLD, ScoreBook
from kltui.metrics.presets import ThresholdSource
from kltui.metrics.summary import Summary
from kltui.session.events import (
    BatchProbed,
    Event,
    ExtrasFetched,
    FloorScored,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    Problem,
    RunFinished,
    RunStarted,
    SampleScored,
    SampleSkipped,
    StressTick,
    TokensDecoded,
)
from kltui.session.turns import TurnPlace


@dataclass(frozen=True)
class RecordedConfig:
    """The run's configuration as RunStarted recorded it, typed where the session's readings
    use it (a value of the wrong type, from an untrusted recording, reads as unknown)."""

    helpers: tuple[str, ...] = ()  # as asked (--helpers), in order
    servers: tuple[str, ...] = ()
    temperature: float | None = None
    max_new_tokens: int | None = None
    seed: int | None = None
    stream: bool | None = None  # None: streamed where a view shows decodes live
    fleet: dict[str, Any] | None = None  # a --router run's router and workers (run/fleet.py)
    recorded: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, d: object) -> RecordedConfig:
        """Read RunStarted.config."""
        d = d if isinstance(d, dict) else {}
        temp, new, fleet = d.get("temperature"), d.get("max_new_tokens"), d.get("fleet")
        return cls(
            helpers=tuple(h for h in d.get("helpers") or () if isinstance(h, str)),
            servers=tuple(s for s in d.get("servers") or () if isinstance(s, str)),
            temperature=as_float(temp),
            max_new_tokens=as_int(new),
            seed=as_int(d.get("seed")),
            stream=as_bool(d.get("stream")),
            fleet=fleet if isinstance(fleet, dict) else None,
            recorded=MappingProxyType(dict(d)),
        )

    def get(self, key: str, default: Any = None) -> Any:
        """A recorded value by its RunConfig name, `default` when it was not recorded."""
        return self.recorded.get(key, default)


def helper_key(helper: str, server: str) -> str:
    """The key of one helper's state on one server."""
    return f"{helper}@{server}"


def add_scored(book: ScoreBook, ev: SampleScored) -> None:
    """Score one SampleScored event into a ScoreBook."""
    book.add(
        ev.sample,
        np.asarray(ev.token_ids),
        np.asarray(ev.lp_a),
        np.asarray(ev.lp_b),
        ev.cached_tokens,
        ev.prompt_len,
        ev.top_a,
        ev.top_b,
        ev.id_mismatch,
    )


@dataclass
class HelperState:
    """Everything known about one helper on one server, folded from its events."""

    helper: str
    server: str
    n_samples: int
    threshold: float
    tail_threshold: float = DEFAULT_TAIL_THRESHOLD
    settings: dict = field(default_factory=dict)
    threshold_source: ThresholdSource | None = None
    phase: str = "starting"
    # Seconds on the store's clock (see SessionStore.clock): the helper's own start and end,
    # so a live run, `kltui check`, the reports and a replay all show the same duration.
    started: float = 0.0
    finished: float | None = None
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)
    # generated positions -> drill-down extras of a sample (ExtrasFetched, separate request)
    extras: dict[int, list] = field(default_factory=dict)
    # sample -> generated tokens seen so far while decoding (not yet scored)
    decoded_ids: dict[int, list[np.ndarray]] = field(default_factory=dict)
    decoded_len: dict[int, int] = field(default_factory=dict)
    # the scored decode's pace (HelperView.decode_rate): the time and token count of its first
    # TokensDecoded, and the time of its latest (store clock)
    decode_first: tuple[float, int] | None = None
    decode_last: float | None = None
    # when the current phase began (None: at the helper's start) and the seconds of each phase
    # left so far (summed: flush comes twice), store clock: what the helpers panel shows and
    # estimates by before the decode streams
    phase_started: float | None = None
    phase_seconds: dict[str, float] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    # sample -> its second scoring by each engine in another batch (cross_engine's floors)
    floors: dict[int, FloorScored] = field(default_factory=dict)
    # sample -> (cached_tokens, input_tokens) of a skipped request, as its SampleSkipped said
    skipped_tokens: dict[int, tuple[int, int]] = field(default_factory=dict)
    summary: Summary | None = None
    book: ScoreBook = field(default_factory=ScoreBook)
    # multiturn: sample -> its place in the branch tree and its hit (session/turns.py)
    places: dict[int, TurnPlace] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """This helper's key in the store."""
        return helper_key(self.helper, self.server)

    @property
    def n_scored(self) -> int:
        """The number of samples scored so far."""
        return len(self.book.samples)

    @property
    def n_decoded(self) -> int:
        """The number of samples with decoded tokens so far."""
        return len(self.decoded_len)

    @property
    def elapsed(self) -> float:
        """Seconds from start to end, or to the store's "now" while it runs."""
        end = self.finished if self.finished is not None else self.clock()
        return max(0.0, end - self.started)

    @property
    def phase_elapsed(self) -> float:
        """Seconds in the current phase so far."""
        since = self.started if self.phase_started is None else self.phase_started
        return max(0.0, self.clock() - since)

    def row_length(self, sample: int) -> int:
        """The number of tokens of one sample (scored, else decoded so far)."""
        scored = self.book.samples.get(sample)
        if scored is not None:
            return int(scored.k3.size)
        return self.decoded_len.get(sample, 0)

    def decoded_tokens(self, sample: int) -> np.ndarray:
        """The token ids decoded so far for one sample."""
        parts = self.decoded_ids.get(sample)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class SessionStore:
    """The state of one run, folded from its events, that every view reads."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        # The one clock for helper times: an event's own time when it carries one, else this.
        # Wall-clock time in a live run; in a replay, the recording's time of the event being
        # applied (`session.fold`), so replayed durations are the recorded ones.
        self.clock = clock
        self.run: RunStarted | None = None
        self.helpers: dict[str, HelperState] = {}
        self.problems: list[Problem] = []
        self.finished: RunFinished | None = None
        self.version = 0  # bumps on every applied event, so views know when to redraw
        self.replay = False
        # token id -> text, from samples scored with token text (for drill-downs)
        self.token_text: dict[int, str] = {}
        # --stress background traffic, in order (readings/stress.py reads them)
        self.stress: list[StressTick] = []
        self.batch_probes: list[BatchProbed] = []  # --batch-sizes, per helper

    @property
    def config(self) -> RecordedConfig:
        """The run's recorded configuration (empty before RunStarted)."""
        return RecordedConfig.of(self.run.config if self.run else None)

    def fatal(self, source: str, helper: str | None = None) -> Problem | None:
        """The first fatal Problem of `source` (of its `helper`, when given), or None."""
        for p in self.problems:
            if p.fatal and p.source == source and (helper is None or p.helper == helper):
                return p
        return None

    def identity(self, url: str) -> ServerIdentity:
        """What the server at `url` said about itself (empty when the run did not record it)."""
        return identity_of(self.run.servers if self.run else [], url)

    def identities(self) -> list[ServerIdentity]:
        """Every server the run recorded, typed, in the run's order (empty before RunStarted)."""
        return [ServerIdentity.of(s) for s in (self.run.servers if self.run else [])]

    def by_server(self) -> list[HelperState]:
        """Every helper state grouped by server, the servers in the order the run names them
        (a server it does not name last), each server's helpers in the order they started."""
        # with --concurrency the servers' helpers start interleaved
        rank = {ident.url: i for i, ident in enumerate(self.identities())}
        order: dict[str, int] = {}
        for st in self.helpers.values():
            order.setdefault(st.server, rank.get(st.server, len(rank) + len(order)))
        return sorted(self.helpers.values(), key=lambda st: order[st.server])

    def apply(self, event: Event) -> HelperState | None:
        """Fold one event into the store; return the helper state it changed, if any."""
        self.version += 1
        fold = _FOLDS.get(type(event))
        return None if fold is None else fold(self, event)

    def _run_started(self, event: RunStarted) -> None:
        self.run = event

    def _helper_started(self, event: HelperStarted) -> HelperState:
        st = HelperState(
            event.helper,
            event.server,
            event.n_samples,
            event.threshold,
            event.tail_threshold,
            dict(event.settings),
            ThresholdSource.of(event.threshold_source),
            started=self._time_of(event),
            clock=self.clock,
        )
        st.book = ScoreBook(event.tail_threshold)
        self.helpers[st.key] = st
        return st

    def _phase_changed(self, event: PhaseChanged) -> HelperState:
        st = self._state(event.helper, event.server)
        now = self._time_of(event)
        since = st.started if st.phase_started is None else st.phase_started
        st.phase_seconds[st.phase] = st.phase_seconds.get(st.phase, 0.0) + max(0.0, now - since)
        st.phase, st.phase_started = event.phase, now
        return st

    def _tokens_decoded(self, event: TokensDecoded) -> HelperState:
        st = self._state(event.helper, event.server)
        parts = st.decoded_ids.setdefault(event.sample, [])
        have = st.decoded_len.get(event.sample, 0)
        # A cumulative snapshot may repeat what we have: keep only the new tail.
        skip = max(0, have - event.start)
        new = np.asarray(event.token_ids)[skip:]
        if new.size:
            parts.append(new)
        st.decoded_len[event.sample] = max(have, event.start + len(event.token_ids))
        now = self._time_of(event)
        if st.decode_first is None:
            st.decode_first = (now, int(new.size))
        st.decode_last = now
        return st

    def _sample_scored(self, event: SampleScored) -> HelperState:
        st = self._state(event.helper, event.server)
        add_scored(st.book, event)
        st.decoded_ids.pop(event.sample, None)
        if (place := TurnPlace.of(event)) is not None:
            st.places[event.sample] = place
        if event.texts:
            self.token_text.update(
                (i, t)
                for i, t in zip(np.asarray(event.token_ids).tolist(), event.texts, strict=False)
                if t is not None
            )
        return st

    def _sample_skipped(self, event: SampleSkipped) -> HelperState:
        st = self._state(event.helper, event.server)
        st.skipped[event.sample] = event.reason
        st.skipped_tokens[event.sample] = (event.cached_tokens, event.input_tokens)
        return st

    def _helper_finished(self, event: HelperFinished) -> HelperState:
        st = self._state(event.helper, event.server)
        st.summary = Summary.of(
            event.summary,
            # NaN: a recording that starts mid-helper never said
            threshold=st.threshold if math.isfinite(st.threshold) else None,
            threshold_source=st.threshold_source,
            tail_threshold=st.tail_threshold,
        )
        st.phase = "done"
        st.finished = self._time_of(event)
        return st

    def _extras_fetched(self, event: ExtrasFetched) -> HelperState:
        st = self._state(event.helper, event.server)
        st.extras.setdefault(event.sample, []).append(event)
        if event.texts:
            self.token_text.update(
                (i, t)
                for i, t in zip(np.asarray(event.token_ids).tolist(), event.texts, strict=False)
                if isinstance(t, str)
            )
        for k, t in event.alt_texts.items():
            if isinstance(t, str) and str(k).lstrip("-").isdigit():
                self.token_text.setdefault(int(k), t)
        return st

    def _floor_scored(self, event: FloorScored) -> HelperState:
        st = self._state(event.helper, event.server)
        st.floors[event.sample] = event
        return st

    def _problem(self, event: Problem) -> None:
        self.problems.append(event)
        if event.helper and event.fatal:
            for st in self.helpers.values():
                if st.helper == event.helper and st.summary is None:
                    st.phase = "error"

    def _stress_tick(self, event: StressTick) -> None:
        self.stress.append(event)

    def _batch_probed(self, event: BatchProbed) -> None:
        self.batch_probes.append(event)

    def _run_finished(self, event: RunFinished) -> None:
        self.finished = event

    def _time_of(self, event: Event) -> float:
        at = getattr(event, "at", None)  # events that carry the time they were made
        return at if isinstance(at, int | float) else self.clock()

    def _state(self, helper: str, server: str) -> HelperState:
        key = helper_key(helper, server)
        st = self.helpers.get(key)
        if st is None:  # tolerate a recording that starts mid-helper
            st = HelperState(
                helper, server, 0, float("nan"), started=self.clock(), clock=self.clock
            )
            self.helpers[key] = st
        return st


# Each event type's fold, looked up once per event (the store folds every event of a run).
_FOLDS: dict[type, Callable[[SessionStore, Any], HelperState | None]] = {
    RunStarted: SessionStore._run_started,
    HelperStarted: SessionStore._helper_started,
    PhaseChanged: SessionStore._phase_changed,
    TokensDecoded: SessionStore._tokens_decoded,
    SampleScored: SessionStore._sample_scored,
    SampleSkipped: SessionStore._sample_skipped,
    HelperFinished: SessionStore._helper_finished,
    ExtrasFetched: SessionStore._extras_fetched,
    FloorScored: SessionStore._floor_scored,
    Problem: SessionStore._problem,
    StressTick: SessionStore._stress_tick,
    BatchProbed: SessionStore._batch_probed,
    RunFinished: SessionStore._run_finished,
}
