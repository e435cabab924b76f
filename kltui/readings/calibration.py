"""How often the diagnosis's condition-2 reading is wrong, shown by simulation, not asserted.

Each simulated run is what `diagnose_server` reads of a server: match and both cache-hit
helpers, each as a `path_test.PathSide` (per-sample mean k3, differing and compared tokens,
level, gate), and the run counts as "condition 2" when `path_test.judge` finds a state bug on
either cache path, exactly as the diagnosis does. Dense kernel noise per sample is

    mean = scale_i * jitter * gamma

- scale_i, the sample's own noise scale, shared by all three helpers (the same prompt):
  resampled from real per-sample means (`tests/data/real_noise/*.json`,
  {"helper": [per-sample mean k3]}), normalised to their geometric mean and set to `level`;
- jitter = exp(sigma * z), drawn per helper and sample, independent between helpers (or
  shared by the two cache helpers: "correlated helpers"; or Student-t: heavy tails);
- gamma, mean 1 and variance 2 * CORR / L: the average of L token k3 values whose noise is
  correlated over CORR tokens; L log-uniform over the real spread of generated lengths.

Sparse noise instead makes a token differ with a small probability on every path alike, so
match is often exact by chance. Null variants add a systematic shift of both cache helpers,
skip samples, spread the lengths or take the real paired ratios themselves. Planted faults
put a state bug on decode_cache_hit only: a fraction of the samples (10 % to 100 %) at x3, x10
or x30 their noise, a stale prefix, window eviction, a single wrong token, and a fault on a
deterministic server where match is exact.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kltui.readings.path_test import PathSide, judge
from kltui.registry import baseline_path

# the H200 match level with deterministic inference on (docs/FIELD_NOTES.md)
H200_LEVEL = 4.618e-4
CORR = 4.0  # tokens over which kernel noise is correlated within a sample
LENGTHS = (16, 512)  # generated tokens per request, log-uniform
PROMPTS = (32, 184)  # prompt tokens, the built-in prompt set's spread
GATE = 1e-3  # SGLang CI's default threshold, for the gate each helper reports
CACHE = ("prefill_cache_hit", "decode_cache_hit")


@dataclass(frozen=True)
class Noise:
    """The null's ingredients: relative per-sample scales and real paired log ratios."""

    scales: np.ndarray  # per-sample means / their geometric mean
    pairs: np.ndarray  # log(helper / match) per sample, from real runs (may be empty)
    level: float

    @classmethod
    def load(cls, folder: Path, level: float | None = None) -> Noise:
        """Read every {"helper": [per-sample mean k3, ...]} file in `folder`."""
        scales, pairs, levels = [], [], []
        for path in sorted(folder.glob("*.json")):
            data = json.loads(path.read_text())
            runs = {
                k: np.asarray([np.nan if x is None else x for x in v], dtype=np.float64)
                for k, v in data.items()
                if isinstance(v, list)
            }
            base = baseline_path()  # the registry's baseline path: what the others pair with
            match = runs.get(base)
            for h, v in runs.items():
                v = v[np.isfinite(v) & (v > 0)]
                if v.size:
                    scales.append(np.log(v) - np.log(v).mean())
                    levels.append(float(np.exp(np.log(v).mean())))
                if h != base and match is not None and len(runs[h]) == len(match):
                    a, b = runs[h], match
                    ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
                    pairs.append(np.log(a[ok]) - np.log(b[ok]))
        if not scales:
            raise ValueError(f"{folder}: no per-sample means (*.json of {{helper: [...]}})")
        real = float(np.exp(np.mean(np.log(levels))))
        if level is None:
            # below 1e-7 the floor decides everything; calibrate where the test has work to do
            level = real if real > 1e-7 else H200_LEVEL
        return cls(
            np.exp(np.concatenate(scales)),
            np.concatenate(pairs) if pairs else np.zeros(0),
            level,
        )


@dataclass(frozen=True)
class Shape:
    """How one family draws its noise (the null's knobs)."""

    sigma: float = 0.5  # per-helper, per-sample lognormal jitter
    shift: float = 1.0  # both cache helpers' noise this factor above match's
    correlated: bool = False  # the two cache helpers share their jitter
    heavy: bool = False  # Student-t (3 degrees of freedom) jitter instead of normal
    lengths: tuple[int, int] = LENGTHS
    keep: float = 1.0  # the share of samples each cache helper scores (the rest skipped)
    sparse: float = 0.0  # > 0: a token differs with this probability on every path alike
    # > 0: a sample has a noise event with this probability on every path alike, and every
    # token from the event's position on differs (a difference carries forward through the KV)
    clustered: float = 0.0
    real: bool = False  # cache helpers = match times a real paired ratio
    exact_match: bool = False  # a deterministic server: no noise at all (faults alone show)


@dataclass
class Run:
    """One simulated run: per helper its per-sample means and differing-token counts."""

    lengths: np.ndarray
    contexts: np.ndarray
    means: dict[str, np.ndarray]
    differing: dict[str, np.ndarray]
    affected: int = 0  # samples a planted fault put a state bug on (`fraction`)


def _gamma(rng: np.random.Generator, lengths: np.ndarray) -> np.ndarray:
    k = lengths / (2 * CORR)
    return rng.gamma(k, 1 / k)


def _jitter(rng: np.random.Generator, shape: Shape, n: int) -> np.ndarray:
    z = rng.standard_t(3, n) / math.sqrt(3) if shape.heavy else rng.standard_normal(n)
    return np.exp(shape.sigma * z)


def draw(rng: np.random.Generator, noise: Noise, n: int, shape: Shape) -> Run:
    """One simulated run of n samples under `shape`'s noise, before any fault."""
    lo, hi = np.log(shape.lengths)
    lengths = np.exp(rng.uniform(lo, hi, n)).astype(int)
    contexts = rng.integers(PROMPTS[0], PROMPTS[1] + 1, n) + lengths
    means, differing = {}, {}
    if shape.exact_match:
        for h in ("match", *CACHE):
            means[h], differing[h] = np.zeros(n), np.zeros(n, dtype=int)
        return Run(lengths, contexts, means, differing)
    if shape.clustered:
        for h in ("match", *CACHE):
            # shift: the cache paths' events that much more frequent (longer contexts)
            hit = rng.random(n) < shape.clustered * (shape.shift if h != "match" else 1.0)
            onset = (rng.random(n) * lengths).astype(int)
            differing[h] = np.where(hit, lengths - onset, 0)
            size = noise.level * np.exp(2.0 * rng.standard_normal(n)) * differing[h]
            means[h] = size / lengths
        return Run(lengths, contexts, means, differing)
    if shape.sparse:
        for h in ("match", *CACHE):
            hits = rng.binomial(lengths, shape.sparse)
            # each differing token's k3 lognormal about the level; the sample's mean over L
            size = noise.level * np.exp(2.0 * rng.standard_normal(n)) * hits
            means[h] = size * (shape.shift if h != "match" else 1.0) / lengths
            differing[h] = hits
        return Run(lengths, contexts, means, differing)
    scale = noise.level * rng.choice(noise.scales, n)
    means["match"] = scale * _jitter(rng, shape, n) * _gamma(rng, lengths)
    shared = _jitter(rng, shape, n)
    for h in CACHE:
        if shape.real and noise.pairs.size:
            means[h] = means["match"] * np.exp(rng.choice(noise.pairs, n))
            continue
        jit = shared if shape.correlated else _jitter(rng, shape, n)
        means[h] = shape.shift * scale * jit * _gamma(rng, lengths)
    for h in means:
        differing[h] = lengths.copy()
    return Run(lengths, contexts, means, differing)


Fault = Callable[[np.random.Generator, Run, Noise], None]


def fraction(share: float, factor: float) -> Fault:
    """decode_cache_hit's noise `factor` times larger on each sample with chance `share`."""

    def plant(rng: np.random.Generator, run: Run, noise: Noise) -> None:
        hit = rng.random(run.lengths.size) < share
        run.affected = int(np.count_nonzero(hit))
        run.means["decode_cache_hit"] = np.where(
            hit, run.means["decode_cache_hit"] * factor, run.means["decode_cache_hit"]
        )

    return plant


def stale_prefix(size: float) -> Fault:
    """Every request hits the corrupted prefix: excess `size` x the noise level (median)."""

    def plant(rng: np.random.Generator, run: Run, noise: Noise) -> None:
        h = run.means["decode_cache_hit"]
        run.means["decode_cache_hit"] = h + size * noise.level * np.exp(rng.standard_normal(h.size))
        run.differing["decode_cache_hit"] = run.lengths.copy()

    return plant


def window_evict(window: int, size: float) -> Fault:
    """Requests whose context outgrows `window` lose the oldest part of it."""

    def plant(rng: np.random.Generator, run: Run, noise: Noise) -> None:
        lost = np.clip((run.contexts - window) / run.contexts, 0, None)
        kick = np.exp(rng.standard_normal(lost.size))
        run.means["decode_cache_hit"] = run.means["decode_cache_hit"] + (
            size * noise.level * lost * kick
        )
        run.differing["decode_cache_hit"] = np.where(
            lost > 0, run.lengths, run.differing["decode_cache_hit"]
        )

    return plant


def blip(low: float, high: float) -> Fault:
    """One token per request with k3 log-uniform in [low, high], the rest untouched."""

    def plant(rng: np.random.Generator, run: Run, noise: Noise) -> None:
        k3 = np.exp(rng.uniform(math.log(low), math.log(high), run.lengths.size))
        run.means["decode_cache_hit"] = run.means["decode_cache_hit"] + k3 / run.lengths
        run.differing["decode_cache_hit"] = np.maximum(run.differing["decode_cache_hit"], 1)

    return plant


def sides(run: Run, rng: np.random.Generator, keep: float) -> dict[str, PathSide]:
    """What the diagnosis reads of each helper: skipped samples NaN, levels and gates."""
    out = {}
    n = run.lengths.size
    for h, means in run.means.items():
        scored = np.ones(n, dtype=bool) if h == "match" else rng.random(n) < keep
        if not scored.any():
            scored[rng.integers(n)] = True
        m = np.where(scored, means, np.nan)
        level = float(np.mean(means[scored]))
        out[h] = PathSide(
            m,
            int(run.differing[h][scored].sum()),
            int(run.lengths[scored].sum()),
            level,
            level <= GATE,
            int(np.count_nonzero(run.differing[h][scored])),
            int(scored.sum()),
        )
    return out


def judged(
    run: Run, rng: np.random.Generator, keep: float = 1.0
) -> tuple[dict[str, PathSide], dict[str, str]]:
    """What the diagnosis reads of each helper, and each cache path's verdict kind as
    `diagnose_server` reaches it (the exact cache paths' samples pooled with match's)."""
    s = sides(run, rng, keep)
    pool = sum(s[h].samples for h in CACHE if s[h].differing == 0)
    return s, {h: judge(h, s[h], s["match"], pool).kind for h in CACHE}


def verdicts(run: Run, rng: np.random.Generator, keep: float = 1.0) -> dict[str, str]:
    """Each cache path's verdict kind (`judged`)."""
    return judged(run, rng, keep)[1]


Family = tuple[Shape, Fault | None]

NULLS: dict[str, Family] = {
    "same process, sigma 0.5": (Shape(0.5), None),
    "same process, sigma 1": (Shape(1.0), None),
    "same process, sigma 2": (Shape(2.0), None),
    "both cache helpers x1.3, sigma 0.5": (Shape(0.5, 1.3), None),
    "both cache helpers x1.3, sigma 2": (Shape(2.0, 1.3), None),
    "both cache helpers x2, sigma 0.5": (Shape(0.5, 2.0), None),
    "both cache helpers x2, sigma 1": (Shape(1.0, 2.0), None),
    "both cache helpers x2, sigma 2": (Shape(2.0, 2.0), None),
    "correlated cache helpers x2, sigma 1": (Shape(1.0, 2.0, correlated=True), None),
    "heavy-tailed (Student-t 3) jitter, sigma 1": (Shape(1.0, heavy=True), None),
    "heavy-tailed x2, sigma 2": (Shape(2.0, 2.0, heavy=True), None),
    "sparse shared noise, 0.2 % of tokens, 16-64 tokens": (
        Shape(sparse=0.002, lengths=(16, 64)),
        None,
    ),
    "sparse shared noise, 1 % of tokens, 16-64 tokens": (
        Shape(sparse=0.01, lengths=(16, 64)),
        None,
    ),
    "sparse shared noise x2, 0.5 % of tokens": (Shape(shift=2.0, sparse=0.005), None),
    "clustered shared noise, 3 % of samples, 16-64 tokens": (
        Shape(clustered=0.03, lengths=(16, 64)),
        None,
    ),
    "clustered shared noise, 10 % of samples": (Shape(clustered=0.1), None),
    "skipped samples (40 % per cache helper), sigma 1": (Shape(1.0, keep=0.6), None),
    "unequal lengths 4-1024, sigma 0.5": (Shape(0.5, lengths=(4, 1024)), None),
    "real paired ratios": (Shape(0.0, real=True), None),
}

# the faults' own kernel noise, "mild": 5x the spread real H200 pairs show (sigma ~0.1)
FAULT_SIGMA = MILD_SIGMA = 0.5
# "heavy": the widest per-sample spread of the null families, 20x the H200 pairs'
HEAVY_SIGMA = 2.0
SHARES, FACTORS = (0.1, 0.25, 0.5, 1.0), (3.0, 10.0, 30.0)
# the fault families that put a state bug on a share of the samples: name -> (noise, share,
# factor), where the table checks that power never falls as the share or the factor grows
FRACTIONS: dict[str, tuple[str, float, float]] = {
    **{
        f"{int(share * 100)} % of samples x{factor:g}": ("mild", share, factor)
        for share in SHARES
        for factor in FACTORS
    },
    **{
        f"{int(share * 100)} % of samples x10, heavy noise (sigma {HEAVY_SIGMA:g})": (
            "heavy",
            share,
            10.0,
        )
        for share in (0.25, 0.5, 1.0)
    },
}

FAULTS: dict[str, Family] = {
    **{
        name: (
            Shape(MILD_SIGMA if noise == "mild" else HEAVY_SIGMA),
            fraction(share, factor),
        )
        for name, (noise, share, factor) in FRACTIONS.items()
    },
    **{
        f"{int(share * 100)} % of samples x{factor:g}, real H200 pair noise": (
            Shape(0.0, real=True),
            fraction(share, factor),
        )
        for share in (0.1, 0.25)
        for factor in (10.0,)
    },
    "stale prefix, excess 10x noise": (Shape(1.0), stale_prefix(10.0)),
    "window-evict, window 128": (Shape(1.0), window_evict(128, 300.0)),
    "window-evict, window 256": (Shape(1.0), window_evict(256, 300.0)),
    "single-token blip, k3 0.3..3": (Shape(1.0), blip(0.3, 3.0)),
    "deterministic server, window-evict 256": (
        Shape(exact_match=True),
        window_evict(256, 300.0),
    ),
}


# not nulls the tests can tell from a state bug, published as limits (docs/DIAGNOSIS.md): rare
# divergence events more frequent on the cache paths are what the minority test counts
LIMITS: dict[str, Family] = {
    "clustered noise, cache paths' events x2, 10 % of samples": (
        Shape(shift=2.0, clustered=0.1),
        None,
    ),
}


def rates(family: Family, noise: Noise, n: int, runs: int, seed: int) -> dict[str, float]:
    """Of `runs` simulated runs of n samples: the share read as condition 2 ("state") and the
    share left inconclusive or named as a suspicion ("unsure")."""
    shape, fault = family
    rng = np.random.default_rng(seed)
    state = unsure = 0
    for _ in range(runs):
        run = draw(rng, noise, n, shape)
        if fault is not None:
            fault(rng, run, noise)
        kinds = verdicts(run, rng, shape.keep).values()
        if "state" in kinds:
            state += 1
        elif any(k in ("suspect", "few", "unclear") for k in kinds):
            unsure += 1
    return {"state": state / runs, "unsure": unsure / runs}


def rate(family: Family, noise: Noise, n: int, runs: int, seed: int) -> float:
    """The share of runs read as condition 2."""
    return rates(family, noise, n, runs, seed)["state"]


# the per-helper jitter sigmas of `power_by_spread`: 0.71 puts the sd of a sample's log ratio
# (cache over match, two independent jitters) at 1.0; 1.0 puts it at 1.41
SPREAD_SIGMAS = (0.25, 0.5, 0.71, 1.0, 1.41)


def power_by_spread(
    noise: Noise,
    n: int = 128,
    share: float = 0.25,
    factor: float = 10.0,
    sigmas: tuple[float, ...] = SPREAD_SIGMAS,
    runs: int = 2000,
    seed: int = 0,
) -> dict[float, float]:
    """How often a state bug on `share` of the samples at x`factor` is read as condition 2 at
    each per-helper jitter sigma: the curve behind the "per-sample spread" of issue 43's power
    target (docs/DIAGNOSIS.md, "How far the power reaches")."""
    return {
        sigma: rate((Shape(sigma), fraction(share, factor)), noise, n, runs, seed + i)
        for i, sigma in enumerate(sigmas)
    }


def table(
    noise: Noise, sizes: tuple[int, ...] = (8, 32, 128), runs: int = 2000, seed: int = 0
) -> list[dict]:
    """One row per family: kind ("null" or "fault"), name, and the rates at each n."""
    rows = []
    for kind, group in (("null", NULLS), ("fault", FAULTS), ("limit", LIMITS)):
        for i, (name, family) in enumerate(group.items()):
            cells = {n: rates(family, noise, n, runs, seed + 1000 * i + n) for n in sizes}
            rows.append({"kind": kind, "name": name, "rates": cells})
    return rows


__all__ = [
    "CACHE", "FAULTS", "FRACTIONS", "LIMITS", "NULLS", "SPREAD_SIGMAS", "Noise", "Shape",
    "power_by_spread", "rate", "rates", "table",
]  # fmt: skip
