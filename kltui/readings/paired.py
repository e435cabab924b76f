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
EVIDENCE_P = 2.5e-4
# the fewest common samples whose test can reach EVIDENCE_P at all (2**-12 < 2.5e-4)
MIN_COMMON = 12
# the median per-sample ratio against match that counts as a real excess, not a drift
MIN_RATIO = 3.0
# "orders of magnitude above match": the cache-hit fault is the one to fix first
PRIMARY_RATIO = 100.0


HL_MAX_N = 3000  # above this the pairwise averages take too much memory: the plain median
EXACT_N = 200  # above this the signed-rank statistic is normal to far better than EVIDENCE_P


@lru_cache(maxsize=32)
def upper_tail(n: int) -> np.ndarray:
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
        return float(upper_tail(n)[int(w)])
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


def sign_p(up: int, down: int) -> float:
    """One-sided chance of at least `up` of `up + down` fair coins landing up (exact)."""
    m = up + down
    if m == 0 or up == 0:
        return 1.0
    k = np.arange(up, m + 1)
    logs = np.array([math.lgamma(m + 1) - math.lgamma(i + 1) - math.lgamma(m - i + 1) for i in k])
    return float(min(1.0, np.exp(logs - m * math.log(2)).sum()))


def one_path_p(differing: int, units: int, other_units: int) -> float:
    """The chance that all `differing` units (samples) fall on a path of `units` compared units
    and none on the others' `other_units`, were each differing unit as likely to be any
    compared unit of any of them (hypergeometric): when match is exact, how surprising a cache
    path's differences are under noise that every path shares. The unit is the sample, not the
    token: a difference carries forward through the KV to every later position of its sample,
    so one noise event makes a run of differing tokens, never independent ones."""
    if differing <= 0:
        return 1.0
    if differing > units:
        return 0.0
    j = np.arange(differing, dtype=np.float64)
    return float(np.exp(np.sum(np.log(units - j) - np.log(units + other_units - j))))


@dataclass(frozen=True)
class Paired:
    """A cache-hit helper's per-sample mean k3 against match's on the same sample ids."""

    helper: str
    n: int  # common samples with a finite mean on both sides
    higher: int
    lower: int
    equal: int
    ratio: float  # exp(Hodges-Lehmann of per-sample log ratios), means floored at the 1e-9
    p: float  # one-sided Wilcoxon signed-rank test of the log ratios (is it above at all)
    level: float  # the helper's avg_kl_div
    shift_p: float = 1.0  # the same test against a tolerated drift of x MIN_RATIO
    up: int = 0  # samples far above their typical ratio (a minority fault's samples)
    down: int = 0  # samples as far below it
    tail_p: float = 1.0  # exact sign test of up against down
    affected: tuple[int, ...] = ()  # positions (in the common samples) counted in `up`

    @property
    def too_few(self) -> bool:
        """Whether there are too few common samples to conclude anything."""
        return self.n < MIN_COMMON

    @property
    def beyond_chance(self) -> bool:
        """Whether the helper is above match beyond chance at all (drift included)."""
        return self.p < EVIDENCE_P

    @property
    def large(self) -> bool:
        """Whether the typical per-sample ratio is large enough to matter."""
        return self.ratio >= MIN_RATIO

    @property
    def shifted(self) -> bool:
        """Every sample's ratio sits above the tolerated drift beyond chance."""
        return self.shift_p < EVIDENCE_P

    @property
    def minority(self) -> bool:
        """More samples far above their typical ratio than far below it, beyond chance."""
        return self.tail_p < EVIDENCE_P

    @property
    def significant(self) -> bool:
        """Condition 2 on this helper's path: a shift beyond the tolerated drift or a minority
        of samples far above match, beyond chance, above the floor, on enough samples."""
        return not self.too_few and self.level > STRAY_ULP_FLOOR and (self.shifted or self.minority)

    @property
    def suspect(self) -> bool:
        """Samples far above match outnumber those far below without reaching evidence: what a
        state bug in a few samples looks like, and what chance gives now and then."""
        return not self.significant and self.up > self.down and self.tail_p < SUSPECT_P

    def line(self) -> str:
        """The paired comparison as one line of evidence."""
        return (
            f"{self.helper} vs match on {self.n} common samples: higher in {self.higher}, "
            f"lower in {self.lower}, equal in {self.equal} (signed-rank p={self.p:.2g}); "
            f"typical per-sample ratio x{self.ratio:.3g} (beyond a x{MIN_RATIO:g} drift: "
            f"p={self.shift_p:.2g}); far above the typical ratio in {self.up}, far below in "
            f"{self.down} (sign test p={self.tail_p:.2g}); a state bug needs p<{EVIDENCE_P:g} "
            f"in one of the two tests"
            + (f" and at least {MIN_COMMON} common samples" if self.too_few else "")
        )


# below this, far-above samples that do not reach EVIDENCE_P are named as a suspicion
SUSPECT_P = 0.01


def paired(helper: str, mine: np.ndarray, theirs: np.ndarray, level: float) -> Paired:
    """The paired comparison of per-sample means `mine` (helper) and `theirs` (match)."""
    mine = np.asarray(mine, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    ok = np.isfinite(mine) & np.isfinite(theirs)
    where = np.flatnonzero(ok)
    mine, theirs = mine[ok], theirs[ok]
    f = STRAY_ULP_FLOOR
    r = np.log(np.maximum(mine, 0.0) + f) - np.log(np.maximum(theirs, 0.0) + f)
    # both at rounding level: equal, whatever their ratio (the floor, the same in every branch)
    r[(mine <= f) & (theirs <= f)] = 0.0
    higher = int(np.count_nonzero(r > 0))
    lower = int(np.count_nonzero(r < 0))
    # a minority fault leaves the typical ratio alone and puts its samples far above it; under
    # "same noise process" a sample is as likely far below its typical ratio as far above,
    # whatever the drift, so the two counts are a fair coin's. The typical ratio is read where
    # both sides are above the floor (a drift moves only those; equal samples stay at 1 and
    # count on neither side)
    both = (mine > f) & (theirs > f)
    res = r - (float(np.median(r[both])) if both.any() else 0.0)
    res[r == 0] = 0.0
    far = math.log(MIN_RATIO)
    up_mask = (res > far) & (r > 0)
    up, down = int(np.count_nonzero(up_mask)), int(np.count_nonzero(res < -far))
    return Paired(
        helper,
        int(r.size),
        higher,
        lower,
        int(r.size) - higher - lower,
        float(np.exp(hodges_lehmann(r))),
        signed_rank_p(r),
        level if math.isfinite(level) else math.inf,
        shift_p=signed_rank_p(r - far),
        up=up,
        down=down,
        tail_p=sign_p(up, down),
        affected=tuple(int(i) for i in where[up_mask]),
    )
