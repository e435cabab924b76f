"""Print the calibration table of the diagnosis's condition-2 reading and of its stated limits
(docs/DIAGNOSIS.md), and whether each target holds.

    python bench/calibrate_diagnosis.py [RUNS] [--spread-only]

Reads the real per-sample noise in tests/data/real_noise/*.json and simulates RUNS runs
(default 10000) per family and sample count, each judged on both cache-hit helpers as
`diagnose_server` judges them (kltui/readings/calibration.py); the stated limits are checked on
RUNS / 10 runs per cell (kltui/readings/calibration_limits.py: each run plants its own limits).
Then the power of the 25 %-at-x10 cell at n = 128 against the per-sample spread
(`calibration.power_by_spread`, RUNS / 5 runs per sigma); --spread-only prints that alone.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from kltui.readings.calibration import (
    FRACTIONS,
    HEAVY_SIGMA,
    MILD_SIGMA,
    Noise,
    power_by_spread,
    table,
)
from kltui.readings.calibration_limits import DETECT, limit_table, monotone
from kltui.readings.paired import EVIDENCE_P, MIN_COMMON, MIN_RATIO, SPREAD_P, SUSPECT_P

SIZES = (8, 32, 128)


def _k(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:g}"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f} %"


def _np_bound(sigma: float, n: int = 128, share: float = 0.25, factor: float = 10.0) -> float:
    """The most power any test can have against the fault at a 0.1 % false rate: the
    Neyman-Pearson likelihood-ratio test of one simple null (every log ratio normal, with the
    fault's own mean as a tolerated drift and the spread known exactly) against the mixture
    (a `share` of the samples `factor` higher). A test that must also hold every other null, and
    does not know the spread, can only do worse."""
    rng = np.random.default_rng(0)
    s, delta = sigma * math.sqrt(2), math.log(factor)
    mu0 = share * delta

    def llr(r: np.ndarray) -> np.ndarray:
        mix = (1 - share) * np.exp(-(r**2) / (2 * s * s)) + share * np.exp(
            -((r - delta) ** 2) / (2 * s * s)
        )
        return (np.log(mix) + (r - mu0) ** 2 / (2 * s * s)).sum(axis=1)

    null = np.concatenate([llr(rng.normal(mu0, s, (20000, n))) for _ in range(10)])
    threshold = np.quantile(null, 1 - 1e-3)
    hit = rng.random((50000, n)) < share
    return float(np.mean(llr(rng.normal(0, s, (50000, n)) + hit * delta) > threshold))


def _mixture_llr(x: np.ndarray, iters: int = 60) -> np.ndarray:
    """Per row: the log-likelihood ratio of a two-component normal mixture (equal variances,
    fitted by EM from three starting shares) against one normal, both fitted to the row."""
    m, v0 = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    one = (-0.5 * np.log(2 * math.pi * v0) - (x - m) ** 2 / (2 * v0)).sum(axis=1)
    best = np.full(x.shape[0], -np.inf)
    for start in (0.1, 0.25, 0.4):
        lo = np.quantile(x, 0.3, axis=1)[:, None]
        hi = np.quantile(x, 0.9, axis=1)[:, None]
        p, v = np.full_like(m, start), v0 / 2
        for _ in range(iters):
            a = (1 - p) * np.exp(-((x - lo) ** 2) / (2 * v))
            b = p * np.exp(-((x - hi) ** 2) / (2 * v))
            w = b / (a + b + 1e-300)
            p = w.mean(axis=1, keepdims=True).clip(1e-3, 1 - 1e-3)
            lo = ((1 - w) * x).sum(axis=1, keepdims=True) / (
                (1 - w).sum(axis=1, keepdims=True) + 1e-12
            )
            hi = (w * x).sum(axis=1, keepdims=True) / (w.sum(axis=1, keepdims=True) + 1e-12)
            v = ((1 - w) * (x - lo) ** 2 + w * (x - hi) ** 2).mean(axis=1, keepdims=True).clip(1e-6)
        dens = (1 - p) * np.exp(-((x - lo) ** 2) / (2 * v)) + p * np.exp(-((x - hi) ** 2) / (2 * v))
        best = np.maximum(best, np.log(dens / np.sqrt(2 * math.pi * v) + 1e-300).sum(axis=1))
    return best - one


def _ratios_alone(sigma: float, n: int = 128, share: float = 0.25, factor: float = 10.0) -> float:
    """What the log ratios alone can find, without match's own spread: the best of three shape
    tests (sample skewness, Bowley's quartile skewness over the 10th-90th percentiles, a
    normal-mixture likelihood ratio), each at the 0.1 % threshold of the normal null with the
    true spread. That threshold is one no real test knows, and it is not valid for heavy-tailed
    nulls (the mixture ratio reads Student-t 3 as a mixture in about a third of runs): the
    figure is an optimistic ceiling for tests of the ratios' shape, not a test to ship."""
    rng = np.random.default_rng(1)
    s = sigma * math.sqrt(2)

    def shapes(x: np.ndarray) -> list[np.ndarray]:
        z = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)
        q10, q50, q90 = np.quantile(x, [0.1, 0.5, 0.9], axis=1)
        return [(z**3).mean(axis=1), (q90 + q10 - 2 * q50) / (q90 - q10), _mixture_llr(x)]

    null = shapes(rng.normal(0.0, s, (10000, n)))
    mix = shapes(rng.normal(0.0, s, (4000, n)) + math.log(factor) * (rng.random((4000, n)) < share))
    return max(float(np.mean(b > np.quantile(a, 1 - 1e-3))) for a, b in zip(null, mix, strict=True))


def _spread(noise: Noise, runs: int) -> None:
    t0 = time.perf_counter()
    curve = power_by_spread(noise, runs=runs, seed=0)
    print(
        f"\n25 % of samples x10 at n = 128, by per-helper jitter sigma (sd of a sample's log "
        f"ratio = sigma x 1.41); {runs} runs per sigma ({time.perf_counter() - t0:.0f} s); the "
        f"bound: the Neyman-Pearson test that knows the spread, at a 0.1 % false rate; the log "
        f"ratios alone: the best of three shape tests given the normal null's threshold:\n"
    )
    print("| sigma | sd of the log ratio | condition 2 | the most any test finds | ratios alone |")
    print("|---:|---:|---:|---:|---:|")
    for sigma, found in curve.items():
        print(
            f"| {sigma:g} | {sigma * math.sqrt(2):.2f} | {100 * found:.1f} % | "
            f"{100 * _np_bound(sigma):.1f} % | {100 * _ratios_alone(sigma):.1f} % |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="?", type=int, default=10000, help="runs per cell (10000)")
    ap.add_argument("--spread-only", action="store_true", help="the power-by-spread block alone")
    args = ap.parse_args()
    runs = args.runs
    few = max(100, runs // 10)
    folder = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_noise"
    noise = Noise.load(folder)
    if args.spread_only:
        _spread(noise, max(100, runs // 5))
        return
    t0 = time.perf_counter()
    rows = table(noise, SIZES, runs=runs, seed=0)
    t1 = time.perf_counter()
    limits = limit_table(noise, SIZES, runs=few, seed=0)
    t2 = time.perf_counter()
    print(
        f"noise: {noise.scales.size} real per-sample scales, {noise.pairs.size} real paired "
        f"ratios, level {noise.level:.3g}; condition 2: p < {EVIDENCE_P:g} in the shift test "
        f"(beyond x{MIN_RATIO:g}) or the minority sign test, or p < {SPREAD_P:g} in the spread "
        f"test, n >= {MIN_COMMON}, or with match exact the one-path sample test; suspicion: "
        f"sign test p < {SUSPECT_P:g}; faults under mild noise (sigma {MILD_SIGMA:g}) unless "
        f"named, heavy is sigma {HEAVY_SIGMA:g}; {runs} runs per cell ({t1 - t0:.0f} s), "
        f"stated limits on {few} runs per cell ({t2 - t1:.0f} s)\n"
    )
    print("| | family | " + " | ".join(f"n = {n}: condition 2 / unsure" for n in SIZES) + " |")
    print("|---|---|" + "---:|" * len(SIZES))
    for r in rows:
        cells = " | ".join(
            f"{100 * c['state']:.2f} % / {100 * c['unsure']:.1f} %" for c in r["rates"].values()
        )
        print(f"| {r['kind']} | {r['name']} | {cells} |")
    print(
        "\n| stated limit | family | "
        + " | ".join(f"n = {n}: limit k / covers truth / condition 1 above it" for n in SIZES)
        + " |"
    )
    print("|---|---|" + "---:|" * len(SIZES))
    for r in limits:
        if r["kind"] == "coverage":
            cells = " | ".join(
                f"{_k(c['k'])} / {100 * c['covered']:.1f} % / {100 * c['wrong']:.1f} %"
                for c in r["cells"].values()
            )
        else:
            cells = " | ".join(
                f"{_k(c['k'])} (reached in {100 * c['reached']:.0f} %) / fault at k found "
                f"{_pct(c['found'])}"
                for c in r["cells"].values()
            )
        print(f"| {r['kind']} | {r['name']} | {cells} |")
    print("\ntargets:")
    worst = max(c["state"] for r in rows if r["kind"] == "null" for c in r["rates"].values())
    print(f"- false condition 2 <= 0.1 % in every null family: worst {100 * worst:.2f} %")
    falls = [
        f"n={f.n}: {f.stronger} found {f.drop:.1%} less often than {f.weaker}"
        for f in monotone(rows)
    ]
    print(f"- power never falls as a fault grows (5 points): {'; '.join(falls) or 'holds'}")
    quarter = next(r for r in rows if r["name"] == "25 % of samples x10")["rates"][128]["state"]
    print(f"- 25 % of samples x10, mild, n = 128: found in {100 * quarter:.1f} % (>= 90 %)")
    cover = min(r["cells"][32]["covered"] for r in limits if r["kind"] == "coverage")
    print(f"- the stated limit covers the truth at n = 32: worst {100 * cover:.1f} % (>= 95 %)")
    wrong = max(c["wrong"] for r in limits if r["kind"] == "coverage" for c in r["cells"].values())
    print(f"- a fault above the stated limit read as condition 1: worst {100 * wrong:.2f} % (0)")
    true = [c["found"] for r in limits if r["kind"] == "truth" for c in r["cells"].values()]
    true = [x for x in true if not math.isnan(x)]
    print(
        f"- a fault at the stated limit found in a new run: worst "
        f"{100 * min(true):.1f} % (>= {DETECT:.0%})"
        if true
        else "- no limit reached"
    )
    assert all(name in {r["name"] for r in rows} for name in FRACTIONS)
    _spread(noise, max(100, runs // 5))


if __name__ == "__main__":
    main()
