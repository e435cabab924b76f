"""Print the calibration table of the diagnosis's condition-2 reading and of its stated limits
(docs/DIAGNOSIS.md), and whether each target holds.

    python bench/calibrate_diagnosis.py [RUNS]

Reads the real per-sample noise in tests/data/real_noise/*.json and simulates RUNS runs
(default 10000) per family and sample count, each judged on both cache-hit helpers as
`diagnose_server` judges them (kltui/readings/calibration.py); the stated limits are checked on
RUNS / 10 runs per cell (kltui/readings/calibration_limits.py: each run plants its own limits).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from kltui.readings.calibration import (
    FRACTIONS,
    HEAVY_SIGMA,
    MILD_SIGMA,
    Noise,
    table,
)
from kltui.readings.calibration_limits import DETECT, limit_table, monotone
from kltui.readings.paired import EVIDENCE_P, MIN_COMMON, MIN_RATIO, SPREAD_P, SUSPECT_P

SIZES = (8, 32, 128)


def _k(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:g}"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f} %"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    few = max(100, runs // 10)
    folder = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_noise"
    noise = Noise.load(folder)
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
    falls = monotone(rows)
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


if __name__ == "__main__":
    main()
