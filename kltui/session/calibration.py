"""How often the condition-2 test (`paired.paired`) is wrong, shown by simulation, not asserted.

Each simulated run is one cache-hit helper against match on n samples, at the level of what the
test reads: each sample's mean k3. Under the null both come from the same noise process:

    mean = scale_i * jitter * gamma

- scale_i, the sample's own noise scale, shared by both helpers (the same prompt): resampled
  from real per-sample means (`tests/data/real_noise/*.json`, {"helper": [per-sample mean k3]}),
  normalised to their geometric mean and set to `level`;
- jitter = exp(sigma * z), drawn per helper and sample: heavy-tailed, and independent between
  the two sides, the harder case for the test (the scales need not even match);
- gamma, mean 1 and variance 2 * CORR / L: the average of L token k3 values whose noise is
  correlated over CORR tokens; L follows the real spread of generated lengths (16 to 512).

Null variants add a systematic shift of the helper's scale (decode_cache_hit's longer contexts)
or take the real paired ratios themselves. Planted faults add a state bug's excess to the
helper's means: a stale prefix on every hit, window eviction (only requests whose context
outgrows the window, in proportion to what was evicted) and a single wrong token per request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kltui.helpers.registry import baseline_path
from kltui.session.paired import paired

# the H200 match level with deterministic inference on (docs/FIELD_NOTES.md)
H200_LEVEL = 4.618e-4
CORR = 4.0  # tokens over which kernel noise is correlated within a sample
LENGTHS = (16, 512)  # generated tokens per request, log-uniform
PROMPTS = (32, 184)  # prompt tokens, the built-in prompt set's spread


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
                k: np.asarray(v, dtype=np.float64) for k, v in data.items() if isinstance(v, list)
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
class Draw:
    """One simulated run's per-sample quantities, before a scenario touches the helper."""

    match: np.ndarray
    helper: np.ndarray
    lengths: np.ndarray
    contexts: np.ndarray


def _gamma(rng: np.random.Generator, lengths: np.ndarray) -> np.ndarray:
    k = lengths / (2 * CORR)
    return rng.gamma(k, 1 / k)


def draw(rng: np.random.Generator, noise: Noise, n: int, sigma: float) -> Draw:
    """One simulated set of n samples: lengths, contexts and noise scales."""
    lo, hi = np.log(LENGTHS)
    lengths = np.exp(rng.uniform(lo, hi, n)).astype(int)
    contexts = rng.integers(PROMPTS[0], PROMPTS[1] + 1, n) + lengths
    scale = noise.level * rng.choice(noise.scales, n)
    jit = np.exp(sigma * rng.standard_normal((2, n)))
    return Draw(
        scale * jit[0] * _gamma(rng, lengths),
        scale * jit[1] * _gamma(rng, lengths),
        lengths,
        contexts,
    )


Scenario = Callable[[np.random.Generator, Draw, Noise], np.ndarray]


def shifted(factor: float) -> Scenario:
    """Null: the helper's noise a fixed factor above match's on every sample."""
    return lambda rng, d, noise: d.helper * factor


def real_pairs(rng: np.random.Generator, d: Draw, noise: Noise) -> np.ndarray:
    """Null: match's draw times a real per-sample helper/match ratio (shift and all)."""
    if not noise.pairs.size:
        return d.helper
    return d.match * np.exp(rng.choice(noise.pairs, d.match.size))


def stale_prefix(size: float) -> Scenario:
    """Every request hits the corrupted prefix: excess `size` x the noise level (median)."""

    def plant(rng, d, noise):
        return d.helper + size * noise.level * np.exp(rng.standard_normal(d.helper.size))

    return plant


def window_evict(window: int, size: float) -> Scenario:
    """Requests whose context outgrows `window` lose the oldest part of it."""

    def plant(rng, d, noise):
        lost = np.clip((d.contexts - window) / d.contexts, 0, None)
        kick = np.exp(rng.standard_normal(d.helper.size))
        return d.helper + size * noise.level * lost * kick

    return plant


def blip(low: float, high: float) -> Scenario:
    """One token per request with k3 log-uniform in [low, high], the rest untouched."""

    def plant(rng, d, noise):
        k3 = np.exp(rng.uniform(math.log(low), math.log(high), d.helper.size))
        return d.helper + k3 / d.lengths

    return plant


NULLS: dict[str, tuple[Scenario, float]] = {
    "same process, scales lognormal sigma=1": (shifted(1.0), 1.0),
    "same process, scales lognormal sigma=2": (shifted(1.0), 2.0),
    "helper x1.3 systematic shift, sigma=0.3": (shifted(1.3), 0.3),
    "helper x2 systematic shift, sigma=0.3": (shifted(2.0), 0.3),
    "real paired ratios": (real_pairs, 0.0),
}
FAULTS: dict[str, tuple[Scenario, float]] = {
    "stale prefix, excess 30x noise": (stale_prefix(30.0), 1.0),
    "window-evict, window 64": (window_evict(64, 300.0), 1.0),
    "window-evict, window 128": (window_evict(128, 300.0), 1.0),
    "window-evict, window 256": (window_evict(256, 300.0), 1.0),
    "stale prefix, excess 10x noise": (stale_prefix(10.0), 1.0),
    "single-token blip, k3 0.3..3": (blip(0.3, 3.0), 1.0),
}


def rate(scenario: Scenario, sigma: float, noise: Noise, n: int, runs: int, seed: int) -> float:
    """Fraction of `runs` simulated runs of n samples that the test calls condition 2."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        d = draw(rng, noise, n, sigma)
        helper = scenario(rng, d, noise)
        level = float(np.mean(helper))
        hits += paired("helper", helper, d.match, level).significant
    return hits / runs


def table(noise: Noise, sizes=(8, 32, 128), runs: int = 2000, seed: int = 0) -> list[dict]:
    """One row per scenario: kind ("null" or "fault"), name, and the rate at each n."""
    rows = []
    for kind, group in (("null", NULLS), ("fault", FAULTS)):
        for i, (name, (scenario, sigma)) in enumerate(group.items()):
            rates = {n: rate(scenario, sigma, noise, n, runs, seed + 1000 * i + n) for n in sizes}
            rows.append({"kind": kind, "name": name, "rates": rates})
    return rows
