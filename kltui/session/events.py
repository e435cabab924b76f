"""The event stream: the only thing helpers produce and the only thing consumers read.

Events are small immutable records. Arrays travel as numpy arrays in memory and as exact binary
strings in recordings (see `codec.py`), so a replayed run is indistinguishable from a live one.
Events that start or end something carry `at`, the wall-clock time (time.time()) at which the
helper made them: durations come from these, never from when a consumer happened to apply the
event, so a live run, `kltui check` and a replay all show the same seconds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from kltui.metrics.summary import Summary, SummaryStatus


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The run began: its config, the identified servers and the prompt set."""

    run_id: str
    started_at: float
    config: dict[str, Any]
    servers: list[dict[str, Any]]
    prompt_set: dict[str, Any]
    kltui_version: str


@dataclass(frozen=True, slots=True)
class HelperStarted:
    """One helper began on one server, with its gate and settings."""

    helper: str
    server: str
    n_samples: int
    threshold: float
    tail_threshold: float
    settings: dict[str, Any] = field(default_factory=dict)
    # where `threshold` came from: metrics/presets.ThresholdSource as a JSON object (None in
    # older recordings, whose HelperFinished summary carried a label instead)
    threshold_source: dict[str, Any] | None = None
    at: float | None = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class PhaseChanged:
    """A helper entered a phase (decode, flush, prefill, ...)."""

    helper: str
    server: str
    phase: str  # warm | decode | turn1 | turn2 | flush | prefill | score
    at: float | None = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class TokensDecoded:
    """Tokens seen while side B streams; shown grey until the sample is scored."""

    helper: str
    server: str
    sample: int
    start: int
    token_ids: np.ndarray
    output_logprobs: np.ndarray


@dataclass(frozen=True, slots=True)
class SampleScored:
    """Both sides of one sample, aligned token for token (side A = fresh prefill)."""

    helper: str
    server: str
    sample: int
    token_ids: np.ndarray
    lp_a: np.ndarray
    lp_b: np.ndarray
    cached_tokens: int
    prompt_len: int
    # Optional per-position top-k alternatives: [[(token_id, logprob), ...] per position]
    top_a: list | None = None
    top_b: list | None = None
    # Optional text of each token (untrusted model output: escape wherever it is shown)
    texts: list | None = None
    # Positions where side A's server reported another token id than the one scored there,
    # as [[position, reported_id], ...] (a server quirk, see engines/idcheck.py); still scored
    id_mismatch: list | None = None
    # multiturn: where the sample sits (its conversation's group and branch, and the turn) and
    # the cached_tokens its turn was held to (metrics/turn_hits.HitExpectation.to_dict()); None
    # for every other helper and in older recordings (a reader that predates them ignores them)
    group: int | None = None
    branch: int | None = None
    turn: int | None = None
    hit_expected: dict | None = None


@dataclass(frozen=True, slots=True)
class SampleSkipped:
    """A helper could not score one sample, and why."""

    helper: str
    server: str
    sample: int
    reason: str
    cached_tokens: int = 0
    input_tokens: int = 0  # the skipped request's input length (0: not said)


@dataclass(frozen=True, slots=True)
class HelperFinished:
    """One helper ended on one server; its summary is the result."""

    helper: str
    server: str
    summary: dict[str, Any]
    at: float | None = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class ExtrasFetched:
    """Drill-down extras for a window of one scored sample, from a request of their own.

    The gate's requests carry exactly what SGLang's helpers send (no top-k, no token text), so
    the alternatives and text come from a separate prefill-only request, after the gate, over
    generated positions [start, start + len(token_ids)). `lp` is what that request gave the
    scored tokens: it may differ from the gate's lp_a (another batch, a radix-cache prefix), and
    is never scored.
    """

    helper: str
    server: str
    sample: int
    start: int
    token_ids: np.ndarray
    lp: np.ndarray
    top: list  # per position: [[token_id, logprob], ...]
    texts: list | None = None  # text of each token in token_ids (untrusted)
    alt_texts: dict[str, str] = field(default_factory=dict)  # str(token id) -> text, alternatives
    reason: str = ""  # why this window was fetched: "worst samples" | "opened"
    at: float | None = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class FloorScored:
    """cross_engine's floors: one sample scored a second time by each engine in another batch
    composition (one at a time), at the positions of its SampleScored. `lp_a` is SGLang's
    second answer (against the SampleScored's lp_a: SGLang's own noise), `lp_b` vLLM's."""

    helper: str
    server: str
    sample: int
    lp_a: np.ndarray
    lp_b: np.ndarray
    at: float | None = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class Problem:
    """Something went wrong (fatal or not), with where it happened."""

    source: str  # server URL, file, or helper name
    message: str
    fatal: bool
    helper: str | None = None
    phase: str | None = None


@dataclass(frozen=True, slots=True)
class StressTick:
    """`--stress` background traffic at one server, counted at one moment of its helpers.

    `moment` is "start" (its `counts` carry the level's `plan` and bounds), "<helper>/<phase>"
    when a helper enters a phase (the traffic pauses for "flush"), "<helper>/done", and "end"
    (with `server`: the server's own counters since start, retractions and evicted tokens,
    None where /metrics is not served). Counts are cumulative since start (run/stress.py), so
    the difference of two ticks is what the traffic did in between.
    """

    server: str
    level: str
    moment: str
    counts: dict[str, Any]
    at: float | None = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class BatchProbed:
    """`--batch-sizes`: one helper run again at each batch size on the first `samples`
    prompts (run/batch_sizes.py). `changed_at` is the smallest size whose token ids or
    logprobs differ from the smallest size's (None: none), `first` where (sample, position,
    side), `error` why the probe stopped. `sizes` are the sizes run: those asked for up to the
    number of prompts, and that number when a larger one was asked; `not_reached` the asked
    sizes above it (never run), `prompts` that number (None in older recordings)."""

    helper: str
    server: str
    sizes: list[int]
    samples: int
    changed_at: int | None = None
    first: dict[str, Any] | None = None
    error: str | None = None
    at: float | None = field(default_factory=time.time)
    prompts: int | None = None
    not_reached: list[int] = field(default_factory=list)


class RunVerdict(StrEnum):
    """How a run ended (`kltui check`'s exit code says the same); a monitor probe's verdict on
    one server is this run's on it alone."""

    PASS = "pass"
    FAIL = "fail"  # a gate missed (or nothing measured), or a state bug under --stress
    ERROR = "error"  # a helper in error or invalid, a fatal problem, or no answer
    INTERRUPTED = "interrupted"

    @classmethod
    def of(cls, summaries: Sequence[Summary], fatal: bool) -> RunVerdict:
        """A finished run's verdict from its helpers' summaries: error, fail (also: nothing
        measured), pass."""
        if fatal or any(
            s.status in (SummaryStatus.ERROR, SummaryStatus.INVALID) for s in summaries
        ):
            return cls.ERROR
        if not summaries or any(not s.passed for s in summaries):
            return cls.FAIL
        return cls.PASS


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended, with its verdict (a recording's text is read back as a RunVerdict)."""

    summary: dict[str, Any]
    verdict: RunVerdict

    def __post_init__(self) -> None:
        # a recording holds the verdict as text: ValueError (a malformed record) if it is none
        object.__setattr__(self, "verdict", RunVerdict(self.verdict))


Event = (
    RunStarted
    | HelperStarted
    | PhaseChanged
    | TokensDecoded
    | SampleScored
    | SampleSkipped
    | HelperFinished
    | ExtrasFetched
    | FloorScored
    | Problem
    | StressTick
    | BatchProbed
    | RunFinished
)

EVENT_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        RunStarted,
        HelperStarted,
        PhaseChanged,
        TokensDecoded,
        SampleScored,
        SampleSkipped,
        HelperFinished,
        ExtrasFetched,
        FloorScored,
        Problem,
        StressTick,
        BatchProbed,
        RunFinished,
    )
}
