"""Protocol checks: values no correct server can send, found per sample (numpy, vectorized).

A logprob is log p with 0 < p <= 1, so it is <= 0; the probabilities of a position's top-k
alternatives sum to at most 1; and the two sides of a pair score the same token, so a value
that is NaN or infinite on one side only is not a divergence of the engine but a fault of the
answer (a proxy, a parser, a NaN in one path's arithmetic). These are protocol findings: kltui
reports them as such, leaves one-sided positions out of the k3 figures, and never reads them as
numerics. A value NaN or inf on both sides at one position is a numeric fault of the model on
both paths (the diagnosis leaves it out, `readings/evidence.py`) and is not listed here.

A finding is a JSON object `{"kind", "message", "samples", "positions", "count"}`: `samples`
the sample indices, `positions` the first MAX_LISTED [sample, position] pairs, `count` every
position (or answer) it covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np

# vLLM writes -inf as -9999.0 in JSON; a scored token at or below it means "impossible".
LOGPROB_SENTINEL = -9999.0
# a logprob above this is > 0 beyond rounding (float32 log_softmax of the top token: ~1e-7)
POSITIVE_TOLERANCE = 1e-6
# a top-k whose probabilities sum above 1 + this is impossible beyond float32 rounding
TOPK_SUM_TOLERANCE = 1e-4
MAX_LISTED = 100

ONE_SIDED = "one-sided-non-finite"
POSITIVE = "logprob-above-zero"
TOPK_SUM = "top-k-sum-above-one"
UNVERIFIED = "prompt-unverified"
KINDS = (ONE_SIDED, POSITIVE, TOPK_SUM, UNVERIFIED)


def not_a_number(lps: np.ndarray) -> np.ndarray:
    """Per value: NaN, +-inf, or at or below the -inf sentinel (not a number one can score)."""
    a = np.asarray(lps, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(a) | (a <= LOGPROB_SENTINEL)


def one_sided(lp_a: np.ndarray, lp_b: np.ndarray) -> np.ndarray:
    """Per position: exactly one side is not a number (NaN, inf or the -inf sentinel)."""
    return not_a_number(lp_a) ^ not_a_number(lp_b)


def above_zero(lps: np.ndarray, tol: float = POSITIVE_TOLERANCE) -> np.ndarray:
    """Per value: a logprob above 0 beyond rounding (+inf included, NaN not)."""
    a = np.asarray(lps, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return a > tol


def topk_sums(top: list | None) -> np.ndarray:
    """Per position, the sum of exp(logprob) over its top-k alternatives (0 where none).

    `top` is a list per position of (token_id, logprob) pairs (or None), as SampleScored and
    ExtrasFetched carry them."""
    if not top:
        return np.zeros(0)
    counts = np.fromiter((len(row) if row else 0 for row in top), dtype=np.int64, count=len(top))
    flat = [e[1] for row in top if row for e in row]
    if not flat:
        return np.zeros(len(top))
    lp = np.asarray(flat, dtype=np.float64)
    owner = np.repeat(np.arange(len(top)), counts)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.exp(lp)
    # NaN entries are not a sum above 1 (a NaN logprob is reported where it is scored)
    return np.bincount(owner, weights=np.where(np.isnan(p), 0.0, p), minlength=len(top))


def topk_over(top: list | None, tol: float = TOPK_SUM_TOLERANCE) -> np.ndarray:
    """Positions whose top-k probabilities sum above 1 + tol."""
    return np.flatnonzero(topk_sums(top) > 1.0 + tol)


@dataclass(frozen=True, slots=True)
class SampleFaults:
    """One scored sample's protocol faults: positions within its compared tokens."""

    one_sided: np.ndarray  # one side NaN/inf, the other a number: left out of the k3 figures
    positive: np.ndarray  # a logprob > 0 on either side (where not one-sided)
    topk_a: np.ndarray  # side A's top-k sums above 1
    topk_b: np.ndarray

    @property
    def any(self) -> bool:
        """The sample has at least one protocol fault."""
        return bool(
            self.one_sided.size or self.positive.size or self.topk_a.size or self.topk_b.size
        )


NO_FAULTS = SampleFaults(*(np.zeros(0, dtype=np.int64),) * 4)


def sample_faults(
    lp_a: np.ndarray, lp_b: np.ndarray, top_a: list | None = None, top_b: list | None = None
) -> SampleFaults:
    """The protocol faults of one scored sample (both sides' logprobs and top-k)."""
    a = np.asarray(lp_a, dtype=np.float64)
    b = np.asarray(lp_b, dtype=np.float64)
    if a.shape != b.shape:  # a pair of another length fails its own check before scoring
        return NO_FAULTS
    side = one_sided(a, b)
    pos = (above_zero(a) | above_zero(b)) & ~side
    found = SampleFaults(
        np.flatnonzero(side), np.flatnonzero(pos), topk_over(top_a), topk_over(top_b)
    )
    return found if found.any else NO_FAULTS


def _value(v: float) -> str:
    if np.isnan(v):
        return "NaN (null)"
    if np.isinf(v):
        return "+inf" if v > 0 else "-inf"
    if v <= LOGPROB_SENTINEL:
        return f"{v:g} (the -inf sentinel)"
    return f"{v:+.4g}"


def _where(pairs: list[tuple[int, int]]) -> str:
    listed = ", ".join(f"sample {s} position {p}" for s, p in pairs[:4])
    return listed + (f" and {len(pairs) - 4} more" if len(pairs) > 4 else "")


class ProtocolFinding(TypedDict):
    """One kind of protocol fault as the helper summary's `protocol` list keeps it: the samples
    it touches, the first MAX_LISTED (sample, position) pairs and how many there are."""

    kind: str
    message: str
    samples: list[int]
    positions: list[list[int]]
    count: int


def _finding(kind: str, message: str, per_sample: dict[int, np.ndarray]) -> ProtocolFinding:
    pairs = [(s, int(p)) for s, ps in per_sample.items() for p in ps]
    return {
        "kind": kind,
        "message": message,
        "samples": list(per_sample),
        "positions": [list(x) for x in pairs[:MAX_LISTED]],
        "count": len(pairs),
    }


_Item = tuple[int, np.ndarray, np.ndarray, SampleFaults, list | None, list | None]


def findings(
    items: list[_Item],
    sides: tuple[str, str] = ("side A", "side B"),
) -> list[ProtocolFinding]:
    """The protocol findings of a helper's scored samples, one per kind found.

    `items`: (sample, lp_a, lp_b, faults, top_a, top_b) in scoring order; `sides` names A and B
    (for example "prefill" and "decode")."""
    bad = [it for it in items if it[3].any]
    if not bad:
        return []
    found = [
        _one_sided(bad, sides),
        _positive(bad),
        _topk_sum(bad, sides[0], "topk_a"),
        _topk_sum(bad, sides[1], "topk_b"),
    ]
    return [f for f in found if f is not None]


def _one_sided(bad: list[_Item], sides: tuple[str, str]) -> ProtocolFinding | None:
    """NaN/inf on one side only: a fault of the answer, left out of the k3 figures."""
    side = {s: f.one_sided for s, _, _, f, _, _ in bad if f.one_sided.size}
    if not side:
        return None
    s0, a0, b0 = next((s, a, b) for s, a, b, f, _, _ in bad if f.one_sided.size)
    p0 = int(side[s0][0])
    pairs = [(s, int(p)) for s, ps in side.items() for p in ps]
    return _finding(
        ONE_SIDED,
        f"NaN/inf logprobs on one side only at {len(pairs)} position(s) of "
        f"{len(side)} sample(s): {_where(pairs)} (sample {s0} position "
        f"{p0}: {sides[0]} {_value(float(a0[p0]))}, {sides[1]} {_value(float(b0[p0]))}); "
        "the two sides score the same token, so this is a fault of the answer, not a "
        "divergence: those positions are left out of the k3 figures",
        side,
    )


def _positive(bad: list[_Item]) -> ProtocolFinding | None:
    """Logprobs above 0, which no log-probability can be."""
    pos = {s: f.positive for s, _, _, f, _, _ in bad if f.positive.size}
    if not pos:
        return None
    pairs = [(s, int(p)) for s, ps in pos.items() for p in ps]
    top = max(
        float(np.fmax(np.asarray(a)[pos[s]], np.asarray(b)[pos[s]]).max())
        for s, a, b, _, _, _ in bad
        if s in pos
    )
    return _finding(
        POSITIVE,
        f"logprobs above 0 (impossible: a logprob is log p <= 0) at {len(pairs)} "
        f"position(s) of {len(pos)} sample(s): {_where(pairs)} (largest "
        f"{_value(top)}); the answers' values are wrong, whatever k3 says",
        pos,
    )


def _topk_sum(bad: list[_Item], label: str, attr: str) -> ProtocolFinding | None:
    """One side's top-k probabilities summing above 1 (`attr`: "topk_a" or "topk_b")."""
    over = {s: getattr(f, attr) for s, _, _, f, _, _ in bad if getattr(f, attr).size}
    if not over:
        return None
    tops = {it[0]: it[4] if attr == "topk_a" else it[5] for it in bad}
    worst = max(float(topk_sums(tops[s])[ps].max()) for s, ps in over.items())
    pairs = [(s, int(p)) for s, ps in over.items() for p in ps]
    return _finding(
        TOPK_SUM,
        f"{label} top-k probabilities sum above 1 (impossible) at {len(pairs)} "
        f"position(s) of {len(over)} sample(s): {_where(pairs)} (largest "
        f"sum {worst:.4g})",
        over,
    )


def unverified(samples: list[int], why: str) -> dict:
    """The finding for answers whose prompt nothing in the answer confirms."""
    listed = ", ".join(map(str, samples[:8])) + (" ..." if len(samples) > 8 else "")
    return {
        "kind": UNVERIFIED,
        "message": f"answers' prompts cannot be verified for {len(samples)} sample(s) "
        f"({listed}): {why}; an answer swapped between prompts would read as a divergence",
        "samples": list(samples),
        "positions": [],
        "count": len(samples),
    }
