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
rounding level compare as equal whatever their ratio. A third test sees what neither a shift nor
a minority shows, a state bug on about half of the samples, which moves the typical ratio to
half way and leaves the ratios symmetric about it: the spread of the path's samples against
match's (`spread_tests`), whose power rises with the share of affected samples and with the
size of their excess. `bench/calibrate_diagnosis.py` measures
the false and true rates of exactly this function (docs/DIAGNOSIS.md).
"""

from __future__ import annotations

import math
import warnings
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


# the spread test (`spread_test`): a state bug on some of the samples widens the spread of the
# cache path's log per-sample means against match's. A drift that varies from sample to sample
# but stays within the tolerated x MIN_RATIO adds at most (log MIN_RATIO)^2 / 4 to that spread
# (half the samples at x1, half at x3); the test asks for twice that, so that no drift inside
# the tolerance, at any share of the samples, reads as a state bug (a x10 state bug adds
# 0.99 on a quarter of the samples, 1.3 on half)
SPREAD_MIN = 2 * (math.log(MIN_RATIO) / 2) ** 2
# the spread test's level: half EVIDENCE_P. It is exact at its level under the exchangeable
# null (the calibration measures it there), where the shift test is exact only at a x3 drift
# and the minority sign test is discrete, both conservative below; so it spends its own share
# of the 0.1 % aimed at (0.025 % on two helpers) and the table shows the sum
SPREAD_P = EVIDENCE_P / 2

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


@lru_cache(maxsize=8192)
def sign_p(up: int, down: int) -> float:
    """One-sided chance of at least `up` of `up + down` fair coins landing up (exact)."""
    m = up + down
    if m == 0 or up == 0:
        return 1.0
    k = np.arange(up, m + 1)
    lf = _log_factorials(m)
    logs = lf[m] - lf[k] - lf[m - k]
    return float(min(1.0, np.exp(logs - m * math.log(2)).sum()))


@lru_cache(maxsize=64)
def _log_factorials(m: int) -> np.ndarray:
    """log(i!) for i = 0..m."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, m + 1, dtype=np.float64)))))


def _normal_tail(z: np.ndarray) -> np.ndarray:
    return np.array([0.5 * math.erfc(float(x) / math.sqrt(2)) for x in z], dtype=np.float64)


def flip_tails(t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Per row of `a`, the chance that sum_i e_i |a_i| >= t when every e_i is an independent
    fair sign: the sign-flip null of a sum of symmetric terms. The Lugannani-Rice saddlepoint
    approximation of that tail, accurate far into it where the normal one is not (a few large
    terms make the sum's tail shorter than a normal's); exactly 2^-m where t is the largest sum
    the m nonzero terms can make, and the normal tail where t is within one sd of 0."""
    t = np.asarray(t, dtype=np.float64)
    a = np.abs(np.asarray(a, dtype=np.float64))
    total, var = a.sum(axis=1), (a * a).sum(axis=1)
    m = np.count_nonzero(a, axis=1)
    z = np.where(var > 0, t / np.sqrt(np.where(var > 0, var, 1.0)), -np.inf)
    out = np.where(np.isfinite(z), _normal_tail(np.where(np.isfinite(z), z, 0.0)), 1.0)
    top = (var > 0) & (t >= total * (1 - 1e-12))
    out[top] = 0.5 ** m[top]
    deep = (var > 0) & (z > 1.0) & ~top
    if deep.any():
        aa, tt = a[deep], t[deep]
        lam = np.zeros(tt.size)
        # K'(lam) = sum a tanh(lam a) is increasing and concave for lam > 0: Newton from 0
        # stays below the root and converges to it monotonically
        for _ in range(60):
            th = np.tanh(lam[:, None] * aa)
            k1 = (aa * th).sum(axis=1)
            k2 = (aa * aa * (1 - th * th)).sum(axis=1)
            step = (tt - k1) / np.maximum(k2, 1e-300)
            lam = lam + step
            if np.all(np.abs(step) <= 1e-12 * np.maximum(lam, 1e-300)):
                break
        x = np.abs(lam[:, None] * aa)
        k0 = (x + np.log1p(np.exp(-2 * x)) - math.log(2)).sum(axis=1)
        th = np.tanh(lam[:, None] * aa)
        k2 = (aa * aa * (1 - th * th)).sum(axis=1)
        w = np.sqrt(np.maximum(2 * (lam * tt - k0), 1e-300))
        u = lam * np.sqrt(k2)
        phi = np.exp(-w * w / 2) / math.sqrt(2 * math.pi)
        lr = _normal_tail(w) + phi * (1 / np.maximum(u, 1e-300) - 1 / w)
        out[deep] = np.clip(lr, 0.5 ** m[deep], 1.0)
    return out


def row_medians(x: np.ndarray) -> np.ndarray:
    """The median of each row's values that are not NaN (a column; NaN for a row of none):
    np.nanmedian, without its row-by-row path where no row holds a NaN."""
    if not np.isnan(x).any():
        return np.median(x, axis=1, keepdims=True)
    with warnings.catch_warnings():  # a row with no value
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(x, axis=1, keepdims=True)


def spread_tests(mine: np.ndarray, theirs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The spread test of every row of `mine` (the cache path's per-sample means) against
    `theirs` (match's on the same prompts): (p, excess) per row.

    A state bug on some samples puts their cache means above where the prompt's noise puts
    them, so the cache path's log means spread wider than match's: var(x) - var(y) =
    cov(x - y, x + y) for x, y the two sides' log means (Pitman and Morgan). Under "the same
    noise process on each prompt, up to a common drift" the two sides of a prompt are
    exchangeable once the drift (the median log ratio) is taken off, so each sample's
    d = x - y - drift is as likely negative as positive given the pair, and x + y does not
    change when they swap: the sign-flip null of T = sum d * (rank of x + y, centred). Its
    power rises with the share of affected samples up to half and with the size of their
    excess (a x10 state bug on a quarter of the samples: p ~ 1e-10 at n = 128, sigma 0.5).
    Read where both sides are above the stray-ulp floor (the minority test's typical ratio
    reads the same samples); `excess` is the moment estimate of var(x) - var(y), which the
    verdict compares with SPREAD_MIN."""
    mine = np.atleast_2d(np.asarray(mine, dtype=np.float64))
    theirs = np.atleast_2d(np.asarray(theirs, dtype=np.float64))
    theirs = np.broadcast_to(theirs, mine.shape)
    f = STRAY_ULP_FLOOR
    ok = np.isfinite(mine) & np.isfinite(theirs) & (mine > f) & (theirs > f)
    x = np.log(np.where(ok, mine, 1.0) + f)
    y = np.log(np.where(ok, theirs, 1.0) + f)
    m = np.count_nonzero(ok, axis=1)
    rows = mine.shape[0]
    p, excess = np.ones(rows), np.zeros(rows)
    use = m >= MIN_COMMON
    if not use.any():
        return p, excess
    ok, x, y, m = ok[use], x[use], y[use], m[use]
    r = np.where(ok, x - y, np.nan)
    d = np.where(ok, r - row_medians(r), 0.0)
    s = np.where(ok, x + y, np.inf)  # rows' other samples rank last and weigh nothing
    ranks = np.empty_like(s)
    order = np.argsort(s, axis=1, kind="stable")
    np.put_along_axis(ranks, order, np.arange(1, s.shape[1] + 1, dtype=np.float64)[None, :], 1)
    g = np.where(ok, ranks - (m[:, None] + 1) / 2, 0.0)
    p[use] = flip_tails((d * g).sum(axis=1), d * g)
    centred = np.where(ok, s - np.where(ok, s, 0.0).sum(axis=1, keepdims=True) / m[:, None], 0.0)
    excess[use] = (d * centred).sum(axis=1) / m
    return p, excess


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
    spread_p: float = 1.0  # the spread test: wider than match's beyond chance (`spread_tests`)
    excess: float = 0.0  # its effect: var of the cache side's log means minus match's

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
    def spread(self) -> bool:
        """The cache path's samples spread wider than match's beyond chance and by more than
        any drift within the tolerated x MIN_RATIO could make them (SPREAD_MIN)."""
        return self.spread_p < SPREAD_P and self.excess >= SPREAD_MIN

    @property
    def significant(self) -> bool:
        """Condition 2 on this helper's path: a shift beyond the tolerated drift, a minority
        of samples far above match, or a spread beyond match's, beyond chance, above the
        floor, on enough samples."""
        return (
            not self.too_few
            and self.level > STRAY_ULP_FLOOR
            and (self.shifted or self.minority or self.spread)
        )

    @property
    def suspect(self) -> bool:
        """Samples far above match outnumber those far below without reaching evidence: what a
        state bug in a few samples looks like, and what chance gives now and then."""
        return not self.significant and self.up > self.down and self.tail_p < SUSPECT_P


# below this, far-above samples that do not reach EVIDENCE_P are named as a suspicion
SUSPECT_P = 0.01

# a sample this far above the other side's on the same prompt is "orders of magnitude" above it
FAR = PRIMARY_RATIO
# above this a sample is beyond anything rounding gives (1000x the stray-ulp floor)
DIRECT_LEVEL = 1e3 * STRAY_ULP_FLOOR


@dataclass(frozen=True)
class FarSamples:
    """Where one side's per-sample means (`high`) sit orders of magnitude above the other's
    (`low`) on the same prompts: `up`, the positions FAR above the low side's sample and above
    anything the low side reaches on any prompt (its envelope: in bf16 noise one prompt's low
    side may sit at 1e-6 while the same prompt's high side sits at 1e-4, inside what the low
    side reaches elsewhere); `down`, how many sit as far below; `rounding`, whether the low side
    stays at the stray-ulp floor on every prompt; `top`, the highest of the `up` means."""

    up: tuple[int, ...]
    down: int
    rounding: bool
    top: float
    beyond_rounding: bool  # every `up` sample at DIRECT_LEVEL or more

    @property
    def direct(self) -> bool:
        """Direct evidence, whatever a test over all samples says: the low side at rounding
        level everywhere, the high side orders of magnitude beyond what rounding gives on some
        prompts, and none the other way."""
        return bool(self.up) and self.down == 0 and self.rounding and self.beyond_rounding


def far_samples(high: np.ndarray, low: np.ndarray) -> FarSamples:
    """Sample by sample, where `high` is orders of magnitude above `low` (NaN: not compared)."""
    high = np.asarray(high, dtype=np.float64)
    low = np.asarray(low, dtype=np.float64)
    ok = np.isfinite(high) & np.isfinite(low)
    f = STRAY_ULP_FLOOR
    mine, theirs = np.where(ok, high, 0.0), np.where(ok, low, 0.0)
    ratio = (mine + f) / (theirs + f)
    envelope = max(float(theirs[ok].max()) if ok.any() else 0.0, f)
    up = ok & (ratio >= FAR) & (mine > f) & (mine >= FAR * envelope)
    down = int(np.count_nonzero(ok & (ratio <= 1 / FAR) & (theirs > f)))
    rounding = bool(np.all(low[np.isfinite(low)] <= f))
    return FarSamples(
        tuple(int(i) for i in np.flatnonzero(up)),
        down,
        rounding,
        float(mine[up].max()) if up.any() else 0.0,
        bool(np.all(mine[up] >= DIRECT_LEVEL)),
    )


def paired(helper: str, mine: np.ndarray, theirs: np.ndarray, level: float) -> Paired:
    """The paired comparison of per-sample means `mine` (helper) and `theirs` (match)."""
    mine = np.asarray(mine, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    ok = np.isfinite(mine) & np.isfinite(theirs)
    spread_p, excess = spread_tests(mine[ok][None, :], theirs[ok][None, :])
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
        spread_p=float(spread_p[0]),
        excess=float(excess[0]),
    )
