"""SessionStore: the single source of truth that every consumer (TUI, headless, reports) reads.

It only folds events; every number it holds comes from `metrics.ScoreBook` or from the events.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from kltui.events import (
    Event,
    ExtrasFetched,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    Problem,
    RunFinished,
    RunStarted,
    SampleScored,
    SampleSkipped,
    TokensDecoded,
)
from kltui.metrics import DEFAULT_TAIL_THRESHOLD, ScoreBook


def helper_key(helper: str, server: str) -> str:
    return f"{helper}@{server}"


@dataclass
class HelperState:
    helper: str
    server: str
    n_samples: int
    threshold: float
    tail_threshold: float = DEFAULT_TAIL_THRESHOLD
    settings: dict = field(default_factory=dict)
    phase: str = "starting"
    # Wall-clock times from the events themselves (HelperStarted.at / HelperFinished.at), so a
    # live run, `kltui check` and a replay agree; recordings made before events carried `at`
    # fall back to the time the event was applied.
    started: float = field(default_factory=time.time)
    finished: float | None = None
    # generated positions -> drill-down extras of a sample (ExtrasFetched, separate request)
    extras: dict[int, list] = field(default_factory=dict)
    # sample -> generated tokens seen so far while decoding (not yet scored)
    decoded_ids: dict[int, list[np.ndarray]] = field(default_factory=dict)
    decoded_len: dict[int, int] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    summary: dict | None = None
    book: ScoreBook = field(default_factory=ScoreBook)

    @property
    def key(self) -> str:
        return helper_key(self.helper, self.server)

    @property
    def n_scored(self) -> int:
        return len(self.book.samples)

    @property
    def n_decoded(self) -> int:
        return len(self.decoded_len)

    @property
    def elapsed(self) -> float:
        return max(0.0, (self.finished or time.time()) - self.started)

    def row_length(self, sample: int) -> int:
        scored = self.book.samples.get(sample)
        if scored is not None:
            return int(scored.k3.size)
        return self.decoded_len.get(sample, 0)

    def decoded_tokens(self, sample: int) -> np.ndarray:
        parts = self.decoded_ids.get(sample)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class SessionStore:
    def __init__(self) -> None:
        self.run: RunStarted | None = None
        self.helpers: dict[str, HelperState] = {}
        self.problems: list[Problem] = []
        self.finished: RunFinished | None = None
        self.version = 0  # bumps on every applied event, so views know when to redraw
        self.replay = False
        # token id -> text, from samples scored with token text (for drill-downs)
        self.token_text: dict[int, str] = {}

    def apply(self, event: Event) -> HelperState | None:
        self.version += 1
        match event:
            case RunStarted():
                self.run = event
            case HelperStarted():
                st = HelperState(
                    event.helper,
                    event.server,
                    event.n_samples,
                    event.threshold,
                    event.tail_threshold,
                    dict(event.settings),
                )
                if event.at is not None:
                    st.started = event.at
                st.book = ScoreBook(event.tail_threshold)
                self.helpers[st.key] = st
                return st
            case PhaseChanged():
                st = self._state(event.helper, event.server)
                st.phase = event.phase
                return st
            case TokensDecoded():
                st = self._state(event.helper, event.server)
                parts = st.decoded_ids.setdefault(event.sample, [])
                have = st.decoded_len.get(event.sample, 0)
                # A cumulative snapshot may repeat what we have: keep only the new tail.
                skip = max(0, have - event.start)
                new = np.asarray(event.token_ids)[skip:]
                if new.size:
                    parts.append(new)
                st.decoded_len[event.sample] = max(have, event.start + len(event.token_ids))
                return st
            case SampleScored():
                st = self._state(event.helper, event.server)
                st.book.add(
                    event.sample,
                    np.asarray(event.token_ids),
                    np.asarray(event.lp_a),
                    np.asarray(event.lp_b),
                    event.cached_tokens,
                    event.prompt_len,
                    event.top_a,
                    event.top_b,
                    event.id_mismatch,
                )
                st.decoded_ids.pop(event.sample, None)
                if event.texts:
                    self.token_text.update(
                        (i, t)
                        for i, t in zip(
                            np.asarray(event.token_ids).tolist(), event.texts, strict=False
                        )
                        if t is not None
                    )
                return st
            case SampleSkipped():
                st = self._state(event.helper, event.server)
                st.skipped[event.sample] = event.reason
                return st
            case HelperFinished():
                st = self._state(event.helper, event.server)
                st.summary = event.summary
                st.phase = "done"
                st.finished = event.at if event.at is not None else time.time()
                return st
            case ExtrasFetched():
                st = self._state(event.helper, event.server)
                st.extras.setdefault(event.sample, []).append(event)
                if event.texts:
                    self.token_text.update(
                        (i, t)
                        for i, t in zip(
                            np.asarray(event.token_ids).tolist(), event.texts, strict=False
                        )
                        if isinstance(t, str)
                    )
                for k, t in event.alt_texts.items():
                    if isinstance(t, str) and str(k).lstrip("-").isdigit():
                        self.token_text.setdefault(int(k), t)
                return st
            case Problem():
                self.problems.append(event)
                if event.helper and event.fatal:
                    for st in self.helpers.values():
                        if st.helper == event.helper and st.summary is None:
                            st.phase = "error"
            case RunFinished():
                self.finished = event
        return None

    def _state(self, helper: str, server: str) -> HelperState:
        key = helper_key(helper, server)
        st = self.helpers.get(key)
        if st is None:  # tolerate a recording that starts mid-helper
            st = HelperState(helper, server, 0, float("nan"))
            self.helpers[key] = st
        return st
