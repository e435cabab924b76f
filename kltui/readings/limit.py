"""What a clean or condition-1 reading rules out: its detection limit, from the run's own data.

A reading that finds no state bug is an equivalence claim ("the cache paths add nothing"), and
such a claim is only as strong as the test's power at this run's noise. The limit is measured,
not assumed: a state bug multiplying the cache path's per-sample mean k3 by FACTOR is planted
into new runs drawn from this one (its samples resampled, each sample's two sides swapped at
random, the spread of its log ratios as uncertain as n samples leave it: `_found`) on k samples
chosen at random, SIMS times for each k of a grid, and the decision the diagnosis makes
(`path_test.judge`) is run on each. The stated limit is the smallest k from which every k' >= k
of the grid is found in at least PLANT_DETECT of the plants: "a state bug in >= k of n samples
at >= x10 would have been seen with 95% probability". Every larger k is checked too, so that a
dip in power anywhere above the limit cannot hide behind it; when no k reaches it, the limit is
not reached and the reading says a state bug is not excluded.
`bench/calibrate_diagnosis.py` checks the statement against new runs: a fault at the stated k in
a new run of the same noise is found in at least 95 % of them (docs/DIAGNOSIS.md).

With match exact the plant is exact too: any state bug makes its samples differ, and the limit
is the fewest differing samples the one-path test calls beyond chance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kltui.readings.paired import (
    EVIDENCE_P,
    EXACT_N,
    MIN_COMMON,
    MIN_RATIO,
    SPREAD_MIN,
    SPREAD_P,
    STRAY_ULP_FLOOR,
    one_path_p,
    row_medians,
    sign_p,
    spread_tests,
    upper_tail,
)
from kltui.readings.path_test import PathSide

FACTOR = 10.0  # the size of the state bug the limit speaks of (x10 its sample's noise)
DETECT = 0.95  # the share of state bugs at the limit that a new run finds (what is stated)
# the share of the plants that must be found for that: a run's own noise is one draw of it,
# and a limit read off it at 95 % was met by new runs in as few as 71 % where the power curve
# only just reaches 95 % (calibration); at 99 % of plants, in 95 % or more
PLANT_DETECT = 0.99
SIMS = 100  # plants per k (at 99 %, at most one plant of 100 missed)
SEED = 20261203  # plants drawn the same way every time: a reading is reproducible


@dataclass(frozen=True)
class Limit:
    """The detection limit on one cache path: the fewest affected samples (`k`, None when not
    reached) at x`factor` found in at least `detect` of the plants, out of `n` compared."""

    helper: str
    n: int
    k: int | None
    factor: float = FACTOR
    detect: float = DETECT

    @property
    def reached(self) -> bool:
        """Whether some number of affected samples, up to all of them, is found reliably."""
        return self.k is not None

    def to_json(self) -> dict[str, object]:
        """The JSON form (a diagnosis's `limits`)."""
        return {
            "helper": self.helper,
            "n": self.n,
            "k": self.k,
            "factor": self.factor,
            "detect": self.detect,
        }


def _grid(n: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, ... up to n (n itself always last)."""
    out, k = [], 1
    while k < n:
        out.append(k)
        k = k + 1 if k < 4 else int(k * 1.5)
    return [*out, n] if n else []


def _signed_rank_ps(d: np.ndarray) -> np.ndarray:
    """`paired.signed_rank_p` of every row of `d` at once (zeros dropped)."""
    rows, n = d.shape
    out = np.ones(rows)
    if n == 0:
        return out
    a = np.where(d == 0, np.inf, np.abs(d))
    ranks = np.empty_like(a)
    order = np.argsort(a, axis=1, kind="stable")
    np.put_along_axis(ranks, order, np.arange(1, n + 1, dtype=np.float64)[None, :], axis=1)
    w = np.where(d > 0, ranks, 0.0).sum(axis=1)
    m = np.count_nonzero(d, axis=1)
    for size in np.unique(m):
        rows_m = m == size
        if size == 0:
            continue
        if size <= EXACT_N:
            out[rows_m] = upper_tail(int(size))[w[rows_m].astype(int)]
        else:
            mean, sd = size * (size + 1) / 4, math.sqrt(size * (size + 1) * (2 * size + 1) / 24)
            z = (w[rows_m] - 0.5 - mean) / (sd * math.sqrt(2))
            out[rows_m] = 0.5 * np.array([math.erfc(x) for x in z])
    return out


def _state(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """`paired(...).significant` of every row of `mine` against `theirs` at once: the same
    floor, drift, minority and spread tests (path_test.judge calls that a state bug, match
    noisy)."""
    f = STRAY_ULP_FLOOR
    far = math.log(MIN_RATIO)
    r = np.log(np.maximum(mine, 0.0) + f) - np.log(np.maximum(theirs, 0.0) + f)
    r[(mine <= f) & (theirs <= f)] = 0.0
    shift = _signed_rank_ps(r - far) < EVIDENCE_P
    both = (mine > f) & (theirs > f)
    med = row_medians(np.where(both, r, np.nan))  # NaN: no sample above the floor on both
    res = r - np.where(np.isnan(med), 0.0, med)
    res[r == 0] = 0.0
    up = np.count_nonzero((res > far) & (r > 0), axis=1)
    down = np.count_nonzero(res < -far, axis=1)
    minority = np.array(
        [sign_p(int(u), int(v)) < EVIDENCE_P for u, v in zip(up, down, strict=True)]
    )
    spread_p, excess = spread_tests(mine, theirs)
    spread = (spread_p < SPREAD_P) & (excess >= SPREAD_MIN)
    level = mine.mean(axis=1) > f
    return (mine.shape[1] >= MIN_COMMON) & level & (shift | minority | spread)


def _found(mine: np.ndarray, theirs: np.ndarray, k: int, rng: np.random.Generator) -> float:
    """The share of SIMS plants on k random samples that the decision finds. Each plant is a
    new run drawn from this one, then given a state bug:

    - its samples drawn from this run's with replacement, each sample's two sides swapped with
      chance 1/2 (the sign of its log ratio drawn afresh: what "no state bug, no drift" allows,
      so that a state bug the run may hold unseen, and a drift, do not count as power), and the
      spread of its log ratios (where both sides are above the floor) scaled by
      sqrt(n / chi2_n), the uncertainty of a spread measured on n samples: a new run of this
      noise, not this run again;
    - k random samples of the cache side set to FACTOR times their value (match's on the same
      prompt where the cache side sits at rounding level: a state bug on an exact path is
      measured against the noise match shows there), floored at the stray-ulp level.

    Plants into the run's values as they stand stated limits that a fault at that k in a new
    run of the same noise met in 70 % of runs (sigma 0.5, n = 32); and a limit stated where 95 %
    of such plants were found was met by new runs in 71-79 % at the edges (sigma 1, n = 32;
    sigma 2, n = 128), which PLANT_DETECT closes (docs/DIAGNOSIS.md, stated limits)."""
    n = mine.size
    f = STRAY_ULP_FLOOR
    pick = rng.integers(0, n, (SIMS, n))
    swap = rng.random((SIMS, n)) < 0.5
    cache = np.where(swap, theirs[pick], mine[pick])
    match = np.where(swap, mine[pick], theirs[pick])
    spread = np.sqrt(n / rng.chisquare(n, (SIMS, 1)))
    # where both sides are above the floor (a ratio of two noises; at rounding level a side's
    # value is no noise measured, and scaling a ratio against the floor would invent one)
    both = (cache > f) & (match > f)
    ratio = np.log(np.where(both, cache, 1.0)) - np.log(np.where(both, match, 1.0))
    cache = np.where(both, match * np.exp(spread * ratio), cache)
    base = np.maximum(np.where(cache > f, cache, match), f) * FACTOR
    draw = rng.random((SIMS, n))  # k random samples: the k smallest draws
    chosen = np.argpartition(draw, k - 1, axis=1)[:, :k] if k < n else np.argsort(draw, axis=1)
    np.put_along_axis(cache, chosen, np.take_along_axis(base, chosen, axis=1), axis=1)
    return float(_state(cache, match).mean())


def noisy_limit(helper: str, side: PathSide, match: PathSide) -> Limit:
    """The limit on a cache path compared with a noisy match, from their per-sample means."""
    ok = np.isfinite(side.means) & np.isfinite(match.means)
    mine, theirs = side.means[ok], match.means[ok]
    n = int(mine.size)
    # from the most samples down, each k with plants of its own (the same whatever else is
    # planted), stopping at the first k short of PLANT_DETECT: no smaller k can be the limit
    best = None
    for k in reversed(_grid(n)):
        if _found(mine, theirs, k, np.random.default_rng((SEED, k))) < PLANT_DETECT:
            break
        best = k
    return Limit(helper, n, best)


def exact_limit(helper: str, samples: int, others: int) -> Limit:
    """With match (and `others` samples of exact paths) exact: the fewest differing samples of
    `samples` that the one-path test calls beyond chance; every state bug makes its samples
    differ, so the limit holds at any size."""
    k = next(
        (k for k in range(1, samples + 1) if one_path_p(k, samples, others) < EVIDENCE_P), None
    )
    return Limit(helper, samples, k, factor=0.0)
