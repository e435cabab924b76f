"""Print the calibration table of the diagnosis's condition-2 reading (docs/DIAGNOSIS.md).

    python bench/calibrate_diagnosis.py [RUNS]

Reads the real per-sample noise in tests/data/real_noise/*.json and simulates RUNS runs
(default 10000) per family and sample count, each judged on both cache-hit helpers as
`diagnose_server` judges them; see kltui/readings/calibration.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kltui.readings.calibration import FAULT_SIGMA, Noise, table
from kltui.readings.paired import EVIDENCE_P, MIN_COMMON, MIN_RATIO, SUSPECT_P

SIZES = (8, 32, 128)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    folder = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_noise"
    noise = Noise.load(folder)
    t0 = time.perf_counter()
    rows = table(noise, SIZES, runs=runs, seed=0)
    print(
        f"noise: {noise.scales.size} real per-sample scales, {noise.pairs.size} real paired "
        f"ratios, level {noise.level:.3g}; condition 2: p < {EVIDENCE_P:g} in the shift test "
        f"(beyond x{MIN_RATIO:g}) or the minority sign test, n >= {MIN_COMMON}, or with match "
        f"exact the one-path sample test; suspicion: sign test p < {SUSPECT_P:g}; faults at "
        f"sigma {FAULT_SIGMA:g} unless named; {runs} runs per cell "
        f"({time.perf_counter() - t0:.0f} s)\n"
    )
    print("| | family | " + " | ".join(f"n = {n}: condition 2 / unsure" for n in SIZES) + " |")
    print("|---|---|" + "---:|" * len(SIZES))
    for r in rows:
        what = r["kind"]
        cells = " | ".join(
            f"{100 * c['state']:.2f} % / {100 * c['unsure']:.1f} %" for c in r["rates"].values()
        )
        print(f"| {what} | {r['name']} | {cells} |")


if __name__ == "__main__":
    main()
