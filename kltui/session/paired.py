"""Is a cache-hit helper worse than match beyond kernel noise? A paired test over samples.

Tokens within a sample are correlated and samples differ in length and noise scale, so the only
unit that is exchangeable under "same noise process" is the sample: each sample's mean k3 in the
cache-hit helper against the same sample id's in match. The question has two halves, both
required: is the helper above match beyond what chance gives (a one-sided Wilcoxon signed-rank
test on the per-sample log ratios, exact up to EXACT_N samples: under the null each ratio is as
likely to be r as -r, whatever that sample's scale, so the test is valid for heterogeneous
samples, and a fault that hits only some samples, hard, still ranks high), and is it above by a
real amount (the Hodges-Lehmann estimate of the per-sample ratio, the signed-rank test's own
effect size: the median of the pairwise averages of log ratios, at least MIN_RATIO; unlike the
plain median it still sees a fault that hits a large minority of the samples). A few-percent shift, e.g.
decode_cache_hit's longer contexts, passes the first half as n grows and never the second.
Per-sample means are floored at the 1e-9 stray-ulp level before the ratio, so two sides both at
rounding level compare as equal whatever their ratio. `bench/calibrate_diagnosis.py` measures
the false and true rates of exactly this function (docs/DIAGNOSIS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from kltui.metrics.presets import DETERMINISTIC_KL_DIV

# "measured 0; any state bug produces values orders of magnitude higher" (the guide's 1e-9)
STRAY_ULP_FLOOR = DETERMINISTIC_KL_DIV
# chance, under kernel noise alone, below which the helper's excess counts as evidence: half
# the 0.1 % false condition-2 rate aimed at, since heavy-tailed samples can bring the rate
# close to this bound (docs/DIAGNOSIS.md, calibration)
EVIDENCE_P = 5e-4
# the fewest common samples whose test can reach EVIDENCE_P at all (2**-11 < 5e-4)
MIN_COMMON = 11
# the median per-sample ratio against match that counts as a real excess, not a drift
MIN_RATIO = 3.0
# "orders of magnitude above match": the cache-hit fault is the one to fix first
PRIMARY_RATIO = 100.0


HL_MAX_N = 3000  # above this the pairwise averages take too much memory: the plain median
EXACT_N = 200  # above this the signed-rank statistic is normal to far better than EVIDENCE_P


@lru_cache(maxsize=32)
def _upper_tail(n: int) -> np.ndarray:
    """P(W+ >= w) for w = 0..n(n+1)/2 under the null: each rank's sign a fair coin."""
    dist = np.zeros(n * (n + 1) // 2 + 1)
    dist[0] = 1.0
    for k in range(1, n + 1):
        nxt = dist.copy()
        nxt[k:] += dist[:-k]
        dist = nxt / 2
    return np.cumsum(dist[::-1])[::-1]


def signed_rank_p(r: np.ndarray) -> float:
    """One-sided chance, under a null symmetric about 0, of a signed-rank sum >= that of `r`
    (zeros dropped, ranks of |r| in order: ties between nonzero floats are negligible)."""
    r = np.asarray(r, dtype=np.float64)
    r = r[r != 0]
    n = int(r.size)
    if n == 0:
        return 1.0
    ranks = np.empty(n)
    ranks[np.argsort(np.abs(r), kind="stable")] = np.arange(1, n + 1)
    w = float(ranks[r > 0].sum())
    if n <= EXACT_N:
        return float(_upper_tail(n)[int(w)])
    mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return 0.5 * math.erfc((w - 0.5 - mean) / (sd * math.sqrt(2)))


def hodges_lehmann(r: np.ndarray) -> float:
    """The median of the Walsh averages (r_i + r_j) / 2, i <= j (plain median past HL_MAX_N)."""
    if r.size == 0:
        return 0.0
    if r.size > HL_MAX_N:
        return float(np.median(r))
    i, j = np.triu_indices(r.size)
    return float(np.median((r[i] + r[j]) / 2))


@dataclass(frozen=True)
class Paired:
    """A cache-hit helper's per-sample mean k3 against match's on the same sample ids."""

    helper: str
    n: int  # common samples with a finite mean on both sides
    higher: int
    lower: int
    equal: int
    ratio: float  # exp(Hodges-Lehmann of per-sample log ratios), means floored at the 1e-9
    p: float  # one-sided Wilcoxon signed-rank test of the log ratios
    level: float  # the helper's avg_kl_div

    @property
    def too_few(self) -> bool:
        """Whether there are too few common samples to conclude anything."""
        return self.n < MIN_COMMON

    @property
    def beyond_chance(self) -> bool:
        """Whether the difference is beyond chance (p below the evidence level)."""
        return self.p < EVIDENCE_P

    @property
    def large(self) -> bool:
        """Whether the typical per-sample ratio is large enough to matter."""
        return self.ratio >= MIN_RATIO

    @property
    def significant(self) -> bool:
        """Condition 2 on this helper's path: beyond chance, large, and above the floor."""
        return (
            not self.too_few and self.beyond_chance and self.large and self.level > STRAY_ULP_FLOOR
        )

    def line(self) -> str:
        """The paired comparison as one line of evidence."""
        return (
            f"{self.helper} vs match on {self.n} common samples: higher in {self.higher}, "
            f"lower in {self.lower}, equal in {self.equal} (signed-rank test p={self.p:.2g}); "
            f"typical per-sample ratio x{self.ratio:.3g} (a state bug needs both "
            f"p<{EVIDENCE_P:g} and at least x{MIN_RATIO:g}"
            + (f", and at least {MIN_COMMON} common samples)" if self.too_few else ")")
        )


def paired(helper: str, mine: np.ndarray, theirs: np.ndarray, level: float) -> Paired:
    """The paired comparison of per-sample means `mine` (helper) and `theirs` (match)."""
    mine = np.asarray(mine, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    ok = np.isfinite(mine) & np.isfinite(theirs)
    mine, theirs = mine[ok], theirs[ok]
    f = STRAY_ULP_FLOOR
    r = np.log(np.maximum(mine, 0.0) + f) - np.log(np.maximum(theirs, 0.0) + f)
    # both at rounding level: equal, whatever their ratio (the floor, the same in every branch)
    r[(mine <= f) & (theirs <= f)] = 0.0
    higher = int(np.count_nonzero(r > 0))
    lower = int(np.count_nonzero(r < 0))
    return Paired(
        helper,
        int(r.size),
        higher,
        lower,
        int(r.size) - higher - lower,
        float(np.exp(hodges_lehmann(r))),
        signed_rank_p(r),
        level if math.isfinite(level) else math.inf,
    )
