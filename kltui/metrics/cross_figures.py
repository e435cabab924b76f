"""The cross-engine figures of a run as typed records (`kltui.metrics.cross` computes them).

Each record's `to_json()` writes the object HelperFinished has always carried (the same keys in
the same order, the same values), so recordings read the same both ways; the helpers read the
records' attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class At:
    """A place in a run: a sample and a position in its scored tokens."""

    sample: int
    position: int

    def to_json(self) -> dict[str, int]:
        """{"sample", "position"}."""
        return {"sample": self.sample, "position": self.position}


@dataclass(frozen=True, slots=True)
class Flip:
    """One top-1 flip: each side's top-1 id and top-1/top-2 margin (None: no second token)."""

    sample: int
    position: int
    id_a: int
    id_b: int
    margin_a: float | None
    margin_b: float | None

    def to_json(self) -> dict[str, Any]:
        """The flip as the summary lists it."""
        return {
            "sample": self.sample,
            "position": self.position,
            "id_a": self.id_a,
            "id_b": self.id_b,
            "margin_a": self.margin_a,
            "margin_b": self.margin_b,
        }


@dataclass(frozen=True, slots=True)
class FlipMargins:
    """Every top-1 flip of a run and how many fall inside the margin line (`flip_summary`)."""

    line: float
    flips: int = 0
    within_line: int = 0
    across_line: int = 0
    margin_unknown: int = 0
    max_margin: float | None = None
    median_margin: float | None = None
    largest: Flip | None = None
    listed: tuple[Flip, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The summary's `flip_margins`."""
        return {
            "line": self.line,
            "flips": self.flips,
            "within_line": self.within_line,
            "across_line": self.across_line,
            "margin_unknown": self.margin_unknown,
            "max_margin": self.max_margin,
            "median_margin": self.median_margin,
            "largest": None if self.largest is None else self.largest.to_json(),
            "listed": [f.to_json() for f in self.listed],
        }


@dataclass(frozen=True, slots=True)
class GreedyMismatch:
    """Where two greedy generations first differ, judged by vLLM's check_logprobs_close rule:
    each side's token among the other's logprobs at that step (`first_token_mismatch`)."""

    position: int
    id_a: int
    id_b: int
    a_in_top_b: bool
    b_in_top_a: bool
    passed: bool

    def to_json(self) -> dict[str, Any]:
        """As a sample's `greedy_first_mismatch`."""
        return {
            "position": self.position,
            "id_a": self.id_a,
            "id_b": self.id_b,
            "a_in_top_b": self.a_in_top_b,
            "b_in_top_a": self.b_in_top_a,
            "passed": self.passed,
        }


@dataclass(frozen=True, slots=True)
class FirstMismatch:
    """The run's earliest greedy mismatch and its sample."""

    sample: int
    mismatch: GreedyMismatch

    def to_json(self) -> dict[str, Any]:
        """The summary's `first_token_mismatch`: the sample, then the mismatch's fields."""
        return {"sample": self.sample, **self.mismatch.to_json()}


@dataclass(frozen=True, slots=True)
class CrossFigures:
    """Per-run cross-engine figures (`cross_summary`): |Δlogprob|, agreement rates against
    the migration guide's line, union KL, the first disagreements, the greedy comparison and
    the flips by margin."""

    top_k: int
    agreement_line: float
    positions: int
    flip_margins: FlipMargins
    max_abs_delta: float | None = None
    max_abs_delta_at: At | None = None
    mean_abs_delta: float | None = None
    top1_agreement: float | None = None
    top5_agreement: float | None = None
    topk_overlap: float | None = None
    union_kl_mean: float | None = None
    union_kl_max: float | None = None
    union_coverage: float | None = None
    first_top1_disagreement: At | None = None
    first_token_mismatch: FirstMismatch | None = None
    greedy_compared: int = 0
    greedy_identical: int = 0
    greedy_rule_failures: int = 0
    agreement_ok: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The figures as HelperFinished's summary holds them."""
        return {
            "top_k": self.top_k,
            "agreement_line": self.agreement_line,
            "positions": self.positions,
            "max_abs_delta": self.max_abs_delta,
            "max_abs_delta_at": _json(self.max_abs_delta_at),
            "mean_abs_delta": self.mean_abs_delta,
            "top1_agreement": self.top1_agreement,
            "top5_agreement": self.top5_agreement,
            "topk_overlap": self.topk_overlap,
            "union_kl_mean": self.union_kl_mean,
            "union_kl_max": self.union_kl_max,
            "union_coverage": self.union_coverage,
            "first_top1_disagreement": _json(self.first_top1_disagreement),
            "first_token_mismatch": _json(self.first_token_mismatch),
            "greedy_compared": self.greedy_compared,
            "greedy_identical": self.greedy_identical,
            "greedy_rule_failures": self.greedy_rule_failures,
            "agreement_ok": self.agreement_ok,
            "flip_margins": self.flip_margins.to_json(),
        }


def _json(x: At | FirstMismatch | None) -> dict[str, Any] | None:
    return None if x is None else x.to_json()
