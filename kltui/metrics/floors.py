"""Each engine's own noise beside the gap between the engines (numpy, no I/O).

cross_engine compares SGLang with vLLM on the same ids. Part of that gap is neither engine's
fault in particular: an engine without batch-invariant kernels disagrees with itself when the
same sequence is scored in another batch. A *floor* is that disagreement, measured: the same
sequence scored a second time by the same engine in another batch composition, compared with
its first answer by exactly the metrics the engines are compared with (`metrics.cross`:
`cross_positions` and `cross_summary`), so the floors and the gap read in one unit.

Per floor: avg k3 (SGLang's avg_kl_div arithmetic over the floor's samples), mean and max
|Δlogprob|, top-1 agreement, flips by margin, and how many positions differ at all; a floor with
no differing position is exactly 0 (`zero`: a batch-invariant engine, in this run).

`read_floors` puts the gap against the floors. Two engines whose only difference is each one's
own noise differ, in k3 (about r^2 / 2 for small r), by about the mean of their floors: the gap
is (floor_a + floor_b) / 2 <= the larger floor. The gap is read as the engines' own noise while
it is within `NOISE_RATIO` times the larger floor (room for the floors' own sampling spread) and
as a difference between the engines above that; the kinds are `FloorKind`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from kltui.metrics.cross import CrossPositions, Side, cross_positions, cross_summary
from kltui.metrics.cross_figures import At, FlipMargins
from kltui.metrics.k3 import avg_kl_div

# the gap is "within the engines' own noise" up to this many times the larger floor
NOISE_RATIO = 2.0
# at most this many sequences are scored a second time per engine (evenly spread over the run)
FLOOR_SAMPLES = 8


class FloorKind(StrEnum):
    """The gap between the engines against their own noise."""

    WITHIN = "within floors"  # gap <= NOISE_RATIO x the larger floor: the engines' own noise
    ABOVE = "above floors"  # gap > NOISE_RATIO x the larger floor: the engines differ
    FLOOR_ZERO = "floor zero"  # both floors exactly 0 (batch-invariant) and a gap above 0
    IDENTICAL = "identical"  # the engines agree bit for bit on the floors' samples
    UNMEASURED = "unmeasured"  # no floor was measured (none asked, an error, an old recording)


def floor_sample(indices: list[int], n: int = FLOOR_SAMPLES) -> list[int]:
    """Up to `n` of `indices`, evenly spread (first and last included), in their order."""
    if n <= 0 or not indices:
        return []
    if len(indices) <= n:
        return list(indices)
    picks = np.unique(np.linspace(0, len(indices) - 1, n).round().astype(int))
    return [indices[int(i)] for i in picks]


def floor_positions(first: Side, second: Side) -> CrossPositions:
    """One engine against itself on one sequence: its first answer (side A) and its second, in
    another batch (side B), compared as two engines are."""
    return cross_positions(first, second)


@dataclass(frozen=True, slots=True)
class FloorFigures:
    """One engine against itself over a floor's samples, in cross_engine's metrics plus avg
    k3, the number of differing positions and `zero` (none differs)."""

    samples: tuple[int, ...]
    positions: int
    avg_k3: float | None
    mean_abs_delta: float | None
    max_abs_delta: float | None
    max_abs_delta_at: At | None
    top1_agreement: float | None
    union_kl_mean: float | None
    differing_positions: int
    zero: bool
    flip_margins: FlipMargins

    def to_json(self) -> dict[str, Any]:
        """As the summary's `floors` keeps each engine's."""
        at = self.max_abs_delta_at
        return {
            "samples": list(self.samples),
            "positions": self.positions,
            "avg_k3": self.avg_k3,
            "mean_abs_delta": self.mean_abs_delta,
            "max_abs_delta": self.max_abs_delta,
            "max_abs_delta_at": None if at is None else at.to_json(),
            "top1_agreement": self.top1_agreement,
            "union_kl_mean": self.union_kl_mean,
            "differing_positions": self.differing_positions,
            "zero": self.zero,
            "flip_margins": self.flip_margins.to_json(),
        }


def floor_figures(samples: list[tuple[int, CrossPositions]], *, k: int) -> FloorFigures:
    """One floor's figures over its samples (sample index, positions)."""
    fig = cross_summary(samples, k=k)
    means = [float(np.nanmean(c.k3)) for _, c in samples if c.n]
    differing = sum(int(np.count_nonzero(c.abs_delta != 0)) for _, c in samples)
    return FloorFigures(
        samples=tuple(s for s, _ in samples),
        positions=fig.positions,
        avg_k3=avg_kl_div(means) if means else None,
        mean_abs_delta=fig.mean_abs_delta,
        max_abs_delta=fig.max_abs_delta,
        max_abs_delta_at=fig.max_abs_delta_at,
        top1_agreement=fig.top1_agreement,
        union_kl_mean=fig.union_kl_mean,
        differing_positions=differing,
        zero=bool(means) and differing == 0,
        flip_margins=fig.flip_margins,
    )


def gap_on(per_sample_k3: dict[int, float], samples: list[int]) -> float | None:
    """The engines' avg k3 on the floors' samples (their per-sample mean k3)."""
    vals = [per_sample_k3[s] for s in samples if s in per_sample_k3]
    return avg_kl_div(vals) if vals else None


@dataclass(frozen=True)
class FloorReading:
    """The gap (avg k3 on the floors' samples) against the larger floor."""

    kind: FloorKind
    gap: float | None
    larger: float | None  # the larger floor's avg k3
    larger_engine: str | None  # "SGLang" | "vLLM"
    ratio: float | None  # gap / larger (None when either is unknown or the floor is 0)

    def to_json(self) -> dict[str, Any]:
        """As the summary's `floors` keeps it."""
        return {
            "kind": str(self.kind),
            "gap": self.gap,
            "larger": self.larger,
            "larger_engine": self.larger_engine,
            "ratio": self.ratio,
            "noise_ratio": NOISE_RATIO,
        }


def read_floors(gap: float | None, sglang: float | None, vllm: float | None) -> FloorReading:
    """The gap between the engines against each engine's own floor (all avg k3)."""
    if gap is None or sglang is None or vllm is None:
        return FloorReading(FloorKind.UNMEASURED, gap, None, None, None)
    if not (math.isfinite(gap) and math.isfinite(sglang) and math.isfinite(vllm)):
        return FloorReading(FloorKind.UNMEASURED, gap, None, None, None)
    larger, engine = (vllm, "vLLM") if vllm >= sglang else (sglang, "SGLang")
    if gap == 0:
        return FloorReading(FloorKind.IDENTICAL, gap, larger, engine, None)
    if larger == 0:
        return FloorReading(FloorKind.FLOOR_ZERO, gap, larger, engine, None)
    ratio = gap / larger
    kind = FloorKind.WITHIN if ratio <= NOISE_RATIO else FloorKind.ABOVE
    return FloorReading(kind, gap, larger, engine, ratio)
