"""Token-, sample- and helper-level alignment metrics (numpy only, no per-token Python loops).

Definitions follow `sglang.test.kl_test_utils.compare_kl_divergence` exactly:
r = input_logprob - output_logprob (prefill replay minus decode), k3 = (exp(r) - 1) - r,
a sample's score is np.mean(k3), and avg_kl_div = sum(scores) / len(scores) (an unweighted
mean over samples, summed left to right as Python's sum() does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kltui.metrics.protocol import NO_FAULTS, SampleFaults, findings, sample_faults
from kltui.metrics.summary import SummaryStatus

DEFAULT_TAIL_THRESHOLD = 1e-3
MIN_SAMPLES_FOR_STABLE_MEAN = 32
BOOTSTRAP_RESAMPLES = 2000


def log_ratio(lp_a: np.ndarray, lp_b: np.ndarray) -> np.ndarray:
    """r = lp_a - lp_b, with bitwise-equal pairs (including -inf == -inf) giving exactly 0."""
    a = np.asarray(lp_a, dtype=np.float64)
    b = np.asarray(lp_b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        r = a - b
    r[a == b] = 0.0
    return r


def k3(lp_a: np.ndarray, lp_b: np.ndarray) -> np.ndarray:
    """Per-token k3 = exp(r) - 1 - r; +inf where exactly one side is -inf; NaN for NaN input."""
    r = log_ratio(lp_a, lp_b)
    with np.errstate(over="ignore", invalid="ignore"):
        out = (np.exp(r) - 1) - r
    # exp(+inf) - inf is NaN in IEEE arithmetic, but the limit of k3 as r -> +inf is +inf.
    out[r == np.inf] = np.inf
    return out


def k1(lp_a: np.ndarray, lp_b: np.ndarray) -> np.ndarray:
    """The k1 estimator of KL per token (minus the log ratio)."""
    return -log_ratio(lp_a, lp_b)


def k2(lp_a: np.ndarray, lp_b: np.ndarray) -> np.ndarray:
    """The k2 estimator of KL per token (half the squared log ratio)."""
    r = log_ratio(lp_a, lp_b)
    return r * r / 2


def sglang_avg_kl_div(input_logprobs: list, output_logprobs: list) -> tuple[list[float], float]:
    """SGLang's compare_kl_divergence arithmetic, verbatim, for cross-checking."""
    kl_divs = []
    for inp, out in zip(input_logprobs, output_logprobs, strict=True):
        logr = np.array(inp) - np.array(out)
        kl_divs.append(np.mean((np.exp(logr) - 1) - logr))
    return kl_divs, sum(kl_divs) / len(kl_divs)


@dataclass(frozen=True, slots=True)
class SampleMetrics:
    """The k3 statistics of one sample."""

    n_tokens: int
    mean_k3: float
    max_k3: float
    argmax_k3: int  # position within the generated tokens, -1 if empty
    tail_fraction: float
    n_tail: int
    n_nonzero: int
    first_divergence: int | None  # first position whose logprobs differ at all
    first_above_tail: int | None
    non_finite: int  # tokens whose k3 is NaN or inf (a protocol or numeric fault)
    # positions left out of every figure above (one side NaN/inf: a protocol fault)
    excluded: int = 0


def _first(mask: np.ndarray) -> int | None:
    if not mask.any():
        return None
    return int(np.argmax(mask))


def sample_metrics(
    kl: np.ndarray, lp_a: np.ndarray, lp_b: np.ndarray, tau: float, keep: np.ndarray | None = None
) -> SampleMetrics:
    """The k3 statistics of one sample from its per-token k3 and logprobs.

    `keep`: the positions that count (None: all); the others (one side NaN/inf, a protocol
    fault) are left out of every figure, and positions still index the whole sample."""
    n = int(kl.size)
    if keep is not None and bool(keep.all()):
        keep = None
    kept = n if keep is None else int(np.count_nonzero(keep))
    if kept == 0:
        nan = float("nan")
        return SampleMetrics(n, nan, nan, -1, 0.0, 0, 0, None, None, 0, excluded=n)
    differs = ~(np.asarray(lp_a) == np.asarray(lp_b))
    above = kl > tau
    finite = np.isfinite(kl)
    safe = np.where(np.isnan(kl), -np.inf, kl)
    values = kl
    if keep is not None:
        differs &= keep
        above &= keep
        finite |= ~keep
        safe[~keep] = -np.inf
        values = kl[keep]
    argmax = int(np.argmax(safe))
    return SampleMetrics(
        n_tokens=n,
        mean_k3=float(np.mean(values)),
        max_k3=float(kl[argmax]),
        argmax_k3=argmax,
        tail_fraction=float(np.count_nonzero(above) / kept),
        n_tail=int(np.count_nonzero(above)),
        n_nonzero=int(np.count_nonzero(differs)),
        first_divergence=_first(differs),
        first_above_tail=_first(above),
        non_finite=int(n - np.count_nonzero(finite)),
        excluded=n - kept,
    )


def avg_kl_div(sample_means: list[float]) -> float:
    """SGLang's gate number: sum(per-sample mean k3) / n_samples, summed in sample order."""
    if not sample_means:
        return float("nan")
    return float(sum(np.float64(m) for m in sample_means) / len(sample_means))


def bootstrap_interval(
    sample_means: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """95% percentile bootstrap interval of avg_kl_div over samples (seeded: reruns agree)."""
    means = np.asarray(sample_means, dtype=np.float64)
    n = means.size
    if n == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    # a sample with a NaN/inf logprob makes these NaN/inf: the honest value, printed as such,
    # without numpy's RuntimeWarning on stderr
    with np.errstate(invalid="ignore", over="ignore"):
        boots = means[idx].mean(axis=1)
        lo, hi = np.percentile(boots, [2.5, 97.5])
    return (float(lo), float(hi))


def _percentile(values: np.ndarray, q: float) -> float:
    if not values.size:
        return float("nan")
    with np.errstate(invalid="ignore"):  # inf - inf while interpolating: NaN, no warning
        return float(np.percentile(values, q))


def within_threshold(avg: float | None, threshold: float) -> bool:
    """SGLang's pass rule: avg_kl_div strictly below the threshold (NaN and inf never pass).
    A threshold of 0 asks for bit-exactness (nothing is below 0): avg_kl_div exactly 0."""
    if avg is None or not np.isfinite(avg):
        return False
    return avg < threshold or (threshold == 0 and avg == 0)


def helper_summary(
    per_sample: list[tuple[int, SampleMetrics]],
    k3_arrays: list[np.ndarray],
    *,
    n_samples: int,
    n_skipped: int,
    threshold: float,
    tail_threshold: float,
) -> dict:
    """Per-helper figures. `per_sample` is (sample index, metrics) in scoring order."""
    scored = len(per_sample)
    # a sample whose every position is left out (one side NaN/inf) has no mean to average
    means = [m.mean_k3 for _, m in per_sample if not 0 < m.n_tokens == m.excluded]
    all_k3 = np.concatenate(k3_arrays) if k3_arrays else np.zeros(0)
    tokens = int(all_k3.size)
    avg = avg_kl_div(means)
    summary: dict = {
        "samples": n_samples,
        "scored": scored,
        "skipped": n_skipped,
        "tokens": tokens,
        "avg_kl_div": avg,
        "threshold": threshold,
        "tail_threshold": tail_threshold,
        "token_mean_k3": float(np.mean(all_k3)) if tokens else float("nan"),
        "p50_k3": _percentile(all_k3, 50),
        "p99_k3": _percentile(all_k3, 99),
        "max_k3": float("nan"),
        "max_k3_sample": None,
        "max_k3_position": None,
        "n_tail": int(np.count_nonzero(all_k3 > tail_threshold)),
        "tail_fraction": float(np.count_nonzero(all_k3 > tail_threshold) / tokens)
        if tokens
        else float("nan"),
        "samples_with_difference": sum(1 for _, m in per_sample if m.n_nonzero > 0),
        "first_divergence": None,
        "non_finite_tokens": sum(m.non_finite for _, m in per_sample),
        "bootstrap_95": list(bootstrap_interval(np.array(means))),
        "low_sample_warning": scored < MIN_SAMPLES_FOR_STABLE_MEAN,
    }
    if tokens:
        best = max(per_sample, key=lambda p: -np.inf if np.isnan(p[1].max_k3) else p[1].max_k3)
        summary["max_k3"] = best[1].max_k3
        summary["max_k3_sample"] = best[0]
        summary["max_k3_position"] = best[1].argmax_k3
    firsts = [(m.first_divergence, s) for s, m in per_sample if m.first_divergence is not None]
    if firsts:
        pos, sample = min(firsts)
        summary["first_divergence"] = {"sample": sample, "position": pos}
    summary["passed"] = scored > 0 and within_threshold(avg, threshold)
    return summary


MAX_LISTED_MISMATCHES = 100


@dataclass(slots=True)
class ScoredSample:
    """One scored sample: its tokens, both logprobs, per-token k3 and metrics."""

    sample: int
    token_ids: np.ndarray
    lp_a: np.ndarray
    lp_b: np.ndarray
    k3: np.ndarray
    metrics: SampleMetrics
    cached_tokens: int
    prompt_len: int
    top_a: list | None = None
    top_b: list | None = None
    id_mismatch: list | None = None  # [[position, reported_id], ...]
    faults: SampleFaults = NO_FAULTS  # protocol faults (kltui.metrics.protocol)

    @property
    def counted_k3(self) -> np.ndarray:
        """Per-token k3 of the positions that count (one-sided NaN/inf left out)."""
        if not self.faults.one_sided.size:
            return self.k3
        return np.delete(self.k3, self.faults.one_sided)


class ScoreBook:
    """Accumulates one helper's scored samples; the single place summaries are computed.

    `sides` names side A and side B in protocol findings (for example prefill and decode)."""

    def __init__(
        self,
        tail_threshold: float = DEFAULT_TAIL_THRESHOLD,
        sides: tuple[str, str] = ("side A", "side B"),
    ) -> None:
        self.tail_threshold = tail_threshold
        self.sides = sides
        self.samples: dict[int, ScoredSample] = {}
        self.order: list[int] = []

    def add(
        self,
        sample: int,
        token_ids: np.ndarray,
        lp_a: np.ndarray,
        lp_b: np.ndarray,
        cached_tokens: int = 0,
        prompt_len: int = 0,
        top_a: list | None = None,
        top_b: list | None = None,
        id_mismatch: list | None = None,
    ) -> ScoredSample:
        """Score one sample and keep it."""
        kl = k3(lp_a, lp_b)
        faults = sample_faults(lp_a, lp_b, top_a, top_b)
        keep = None
        if faults.one_sided.size:
            keep = np.ones(kl.size, dtype=bool)
            keep[faults.one_sided] = False
        sm = sample_metrics(kl, lp_a, lp_b, self.tail_threshold, keep)
        scored = ScoredSample(
            sample,
            token_ids,
            lp_a,
            lp_b,
            kl,
            sm,
            cached_tokens,
            prompt_len,
            top_a,
            top_b,
            id_mismatch or None,
            faults,
        )
        if sample not in self.samples:
            self.order.append(sample)
        self.samples[sample] = scored
        return scored

    def summary(self, *, n_samples: int, n_skipped: int, threshold: float) -> dict:
        """The helper summary over every sample scored so far."""
        items = [self.samples[s] for s in self.order]
        summary = helper_summary(
            [(s.sample, s.metrics) for s in items],
            [s.counted_k3 for s in items],
            n_samples=n_samples,
            n_skipped=n_skipped,
            threshold=threshold,
            tail_threshold=self.tail_threshold,
        )
        summary["per_sample"] = [
            {
                "index": s.sample,
                "n_tokens": s.metrics.n_tokens,
                "prompt_len": s.prompt_len,
                "cached_tokens": s.cached_tokens,
                "mean_k3": s.metrics.mean_k3,
                "max_k3": s.metrics.max_k3,
                "first_divergence": s.metrics.first_divergence,
                "first_above_tail": s.metrics.first_above_tail,
                "n_tail": s.metrics.n_tail,
                "n_nonzero": s.metrics.n_nonzero,
                **({"id_mismatch": s.id_mismatch} if s.id_mismatch else {}),
            }
            for s in items
        ]
        # Scored tokens whose id the server reported differently: counted in avg_kl_div as
        # SGLang's helpers count them, and listed so that nobody mistakes them for agreement.
        mism = [
            {"sample": s.sample, "position": p, "sent": int(s.token_ids[p]), "reported": rep}
            for s in items
            for p, rep in (s.id_mismatch or ())
        ]
        summary["id_mismatch_tokens"] = len(mism)
        if mism:
            summary["id_mismatches"] = mism[:MAX_LISTED_MISMATCHES]
        # Values no correct server sends: never read as numerics, and never a pass.
        found = findings(
            [(s.sample, s.lp_a, s.lp_b, s.faults, s.top_a, s.top_b) for s in items], self.sides
        )
        summary["protocol"] = found
        if found:
            invalidate(summary, found)
        return summary


def invalidate(summary: dict, found: Sequence[Mapping[str, Any]]) -> None:
    """Marks a helper summary with protocol findings `invalid` (never a pass), the first
    finding its reason."""
    summary["status"] = SummaryStatus.INVALID
    summary["passed"] = False
    more = f" (and {len(found) - 1} more protocol finding(s))" if len(found) > 1 else ""
    summary["reason"] = f"protocol fault: {found[0]['message']}{more}"
