"""Is a cache-hit helper worse than match beyond kernel noise? A paired test over samples.

Tokens within a sample are correlated and samples differ in length and noise scale, so the only
unit that is exchangeable under "same noise process" is the sample: each sample's mean k3 in the
cache-hit helper against the same sample id's in match. The question has two halves, both
required: is the helper above match on more samples than coin flips give (a one-sided sign test
on the per-sample log ratios, valid whatever the samples' scales), and is it above by a real
amount (the median per-sample ratio at least MIN_RATIO). A few-percent shift, e.g.
decode_cache_hit's longer contexts, passes the first half as n grows and never the second.
Per-sample means are floored at the 1e-9 stray-ulp level before the ratio, so two sides both at
rounding level compare as equal whatever their ratio. `bench/calibrate_diagnosis.py` measures
the false and true rates of exactly this function (docs/DIAGNOSIS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kltui.metrics.presets import DETERMINISTIC_KL_DIV

# "measured 0; any state bug produces values orders of magnitude higher" (the guide's 1e-9)
STRAY_ULP_FLOOR = DETERMINISTIC_KL_DIV
# chance, under kernel noise alone, below which the helper's excess counts as evidence
EVIDENCE_P = 1e-3
# the fewest common samples whose sign test can reach EVIDENCE_P at all (2**-10 < 1e-3)
MIN_COMMON = 10
# the median per-sample ratio against match that counts as a real excess, not a drift
MIN_RATIO = 3.0
# "orders of magnitude above match": the cache-hit fault is the one to fix first
PRIMARY_RATIO = 100.0


def sign_test_p(higher: int, lower: int) -> float:
    """One-sided chance of >= `higher` wins out of higher+lower fair coin flips."""
    n = higher + lower
    if n == 0:
        return 1.0
    return sum(math.comb(n, j) for j in range(higher, n + 1)) / 2**n


@dataclass(frozen=True)
class Paired:
    """A cache-hit helper's per-sample mean k3 against match's on the same sample ids."""

    helper: str
    n: int  # common samples with a finite mean on both sides
    higher: int
    lower: int
    equal: int
    median_ratio: float  # exp(median per-sample log ratio), means floored at STRAY_ULP_FLOOR
    p_sign: float
    level: float  # the helper's avg_kl_div

    @property
    def too_few(self) -> bool:
        return self.n < MIN_COMMON

    @property
    def beyond_chance(self) -> bool:
        return self.p_sign < EVIDENCE_P

    @property
    def large(self) -> bool:
        return self.median_ratio >= MIN_RATIO

    @property
    def significant(self) -> bool:
        """Condition 2 on this helper's path: beyond chance, large, and above the floor."""
        return (
            not self.too_few and self.beyond_chance and self.large and self.level > STRAY_ULP_FLOOR
        )

    def line(self) -> str:
        return (
            f"{self.helper} vs match on {self.n} common samples: higher in {self.higher}, "
            f"lower in {self.lower}, equal in {self.equal} (sign test p={self.p_sign:.2g}); "
            f"median per-sample ratio x{self.median_ratio:.3g} (a state bug needs both "
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
        float(np.exp(np.median(r))) if r.size else 1.0,
        sign_test_p(higher, lower),
        level if math.isfinite(level) else math.inf,
    )
