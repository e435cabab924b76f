"""Print the calibration table of the condition-2 test (docs/DIAGNOSIS.md).

    python bench/calibrate_diagnosis.py [RUNS]

Reads the real per-sample noise in tests/data/real_noise/*.json and simulates RUNS runs
(default 10000) per scenario and sample count; see kltui/session/calibration.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kltui.session.calibration import Noise, table
from kltui.session.paired import EVIDENCE_P, MIN_COMMON, MIN_RATIO

SIZES = (8, 32, 128)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    folder = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_noise"
    noise = Noise.load(folder)
    t0 = time.perf_counter()
    rows = table(noise, SIZES, runs=runs, seed=0)
    print(
        f"noise: {noise.scales.size} real per-sample scales, {noise.pairs.size} real paired "
        f"ratios, level {noise.level:.3g}; test: signed-rank p < {EVIDENCE_P:g} and "
        f"Hodges-Lehmann ratio >= x{MIN_RATIO:g}, n >= {MIN_COMMON}; {runs} runs per cell "
        f"({time.perf_counter() - t0:.0f} s)\n"
    )
    print("| | scenario | " + " | ".join(f"n = {n}" for n in SIZES) + " |")
    print("|---|---|" + "---:|" * len(SIZES))
    for r in rows:
        what = "false condition 2" if r["kind"] == "null" else "detected"
        cells = " | ".join(f"{100 * r['rates'][n]:.2f} %" for n in SIZES)
        print(f"| {what} | {r['name']} | {cells} |")


if __name__ == "__main__":
    main()
