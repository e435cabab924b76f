"""Whether the stated limits are true, shown by simulation (`bench/calibrate_diagnosis.py`).

A reading that finds no state bug states what it rules out (`limit.noisy_limit`): "a state bug
in >= k of n samples at >= x10 would have been seen in 95 % of runs". Two checks, on the
simulated runs of `calibration.py`, read as `diagnose_server` reads them:

- **coverage**, on the fault families: a run whose reading finds no state bug and reaches its
  limits claims to exclude a state bug on k or more samples. The claim is wrong when the planted
  fault is on at least k samples: the fault sits above the stated limit and the reading is
  condition 1, the kernels' noise. A run "covers the truth" when it finds the fault, stays
  unsure, says a state bug is not excluded (a limit not reached) or claims a limit above the
  planted fault;
- **truth**, on the null families: the limit a clean run states, k, taken at its word: a new
  run of the same noise with a x10 state bug on exactly k samples must be found in at least 95 %
  of the runs.

Each simulated run computes the limits as the diagnosis does (SIMS plants per grid point), so
these checks cost far more than the table's cells: the bench runs a tenth of its runs here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kltui.readings.calibration import (
    FAULTS,
    FRACTIONS,
    NULLS,
    Family,
    Noise,
    draw,
    judged,
)
from kltui.readings.limit import DETECT, FACTOR, noisy_limit

# the cells: a share of the samples at x10, under mild and under heavy noise
STATED = tuple(n for n, (_, share, factor) in FRACTIONS.items() if factor == 10 and share >= 0.25)
# the clean runs whose stated limits are taken at their word
TRUTH = ("same process, sigma 0.5", "same process, sigma 2")
UNSURE = ("suspect", "few", "unclear")


def coverage(family: Family, noise: Noise, n: int, runs: int, seed: int) -> dict[str, float]:
    """Of `runs` runs with the fault planted: the share that covers the truth (`covered`), the
    share read as condition 1 with a limit at or below the planted fault (`wrong`), the share
    left open by a limit not reached (`open`), and the median limit claimed (`k`, NaN when
    none was)."""
    shape, fault = family
    rng = np.random.default_rng(seed)
    covered = wrong = open_ = 0
    claimed: list[int] = []
    for _ in range(runs):
        run = draw(rng, noise, n, shape)
        if fault is not None:
            fault(rng, run, noise)
        s, kinds = judged(run, rng, shape.keep)
        if "state" in kinds.values() or any(k in UNSURE for k in kinds.values()):
            covered += 1
            continue
        lim = noisy_limit("decode_cache_hit", s["decode_cache_hit"], s["match"])
        if lim.k is None:
            open_ += 1
            covered += 1
            continue
        if run.affected < lim.k:  # what it excludes, the planted fault is not
            claimed.append(lim.k)
            covered += 1
            continue
        # the other path's limit not reached leaves the reading open ("not excluded")
        other = noisy_limit("prefill_cache_hit", s["prefill_cache_hit"], s["match"])
        if other.k is None:
            open_ += 1
            covered += 1
            continue
        claimed.append(lim.k)
        wrong += 1
    return {
        "covered": covered / runs,
        "wrong": wrong / runs,
        "open": open_ / runs,
        "k": float(np.median(claimed)) if claimed else float("nan"),
    }


def truth(family: Family, noise: Noise, n: int, runs: int, seed: int) -> dict[str, float]:
    """Of `runs` clean runs: the limit each states on decode_cache_hit when it reads condition 1
    (`k`, the median; NaN when none is reached), the share whose limit is reached (`reached`),
    and the share of new runs with a x10 state bug on exactly that many samples that are found
    (`found`, NaN when no limit was reached)."""
    shape, _ = family
    rng = np.random.default_rng(seed)
    stated: list[int] = []
    found = 0
    for _ in range(runs):
        s, kinds = judged(draw(rng, noise, n, shape), rng, shape.keep)
        if "state" in kinds.values() or any(k in UNSURE for k in kinds.values()):
            continue
        lim = noisy_limit("decode_cache_hit", s["decode_cache_hit"], s["match"])
        if lim.k is None:
            continue
        stated.append(lim.k)
        new = draw(rng, noise, n, shape)
        hit = rng.permutation(n)[: lim.k]
        new.means["decode_cache_hit"] = new.means["decode_cache_hit"].copy()
        new.means["decode_cache_hit"][hit] *= FACTOR
        found += "state" in judged(new, rng, shape.keep)[1].values()
    return {
        "k": float(np.median(stated)) if stated else float("nan"),
        "reached": len(stated) / runs,
        "found": found / len(stated) if stated else float("nan"),
    }


def limit_table(
    noise: Noise, sizes: tuple[int, ...] = (8, 32, 128), runs: int = 200, seed: int = 0
) -> list[dict]:
    """One row per checked family: kind ("coverage" or "truth"), name, and its figures at each
    n."""
    rows = []
    for i, name in enumerate(STATED):
        cells = {n: coverage(FAULTS[name], noise, n, runs, seed + 1000 * i + n) for n in sizes}
        rows.append({"kind": "coverage", "name": name, "cells": cells})
    for i, name in enumerate(TRUTH):
        cells = {n: truth(NULLS[name], noise, n, runs, seed + 500 + 1000 * i + n) for n in sizes}
        rows.append({"kind": "truth", "name": name, "cells": cells})
    return rows


@dataclass(frozen=True)
class PowerFall:
    """A cell of the power table found less often than a weaker fault's: under the same noise
    at `n` samples, `stronger` (a share and a factor no smaller) found `drop` less often than
    `weaker`."""

    n: int
    weaker: str
    stronger: str
    drop: float


def monotone(rows: list[dict], slack: float = 0.05) -> list[PowerFall]:
    """Where the table's power falls as a fault grows: for each pair of share-of-samples cells
    under the same noise at the same n, one with a share and a factor no smaller found more than
    `slack` less often. Empty when power never falls."""
    fr = {r["name"]: r for r in rows if r["name"] in FRACTIONS}
    out: list[PowerFall] = []
    for a, ra in fr.items():
        na, sa, fa = FRACTIONS[a]
        for b, rb in fr.items():
            nb, sb, fb = FRACTIONS[b]
            if a == b or na != nb or sb < sa or fb < fa:
                continue
            for n, cell in ra["rates"].items():
                drop = cell["state"] - rb["rates"][n]["state"]
                if drop > slack:
                    out.append(PowerFall(n, a, b, drop))
    return out


__all__ = [
    "DETECT",
    "STATED",
    "TRUTH",
    "PowerFall",
    "coverage",
    "limit_table",
    "monotone",
    "truth",
]
