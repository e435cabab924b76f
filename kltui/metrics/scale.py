"""The one k3 colour scale: fixed decades, the same in the TUI heatmap, its legend, the
drill-down and the HTML report, so a colour means the same magnitude in every run, helper and
screenshot. Views pick the colours; this module only says which level a k3 value falls in.

Levels are ordered by severity (nothing < not scored < exact zero < decades < non-finite), so
the max over a bucket of levels is its worst cell and zooming out never hides a fault.
"""

from __future__ import annotations

import numpy as np

LOW_EXP, HIGH_EXP = -12, 0
EMPTY, PENDING, ZERO = 0, 1, 2  # no token here; decoded but not scored; k3 exactly 0
FIRST_BIN = 3
N_BINS = HIGH_EXP - LOW_EXP + 2  # below 1e-12, one per decade up to 1e-1, then >= 1
NONFINITE = FIRST_BIN + N_BINS  # NaN or inf: a protocol or numeric fault
N_LEVELS = NONFINITE + 1


def bin_exponent(level: int) -> int:
    """Lower decade exponent of a bin level (LOW_EXP - 1 for the 'below 1e-12' bin)."""
    return LOW_EXP - 1 + (level - FIRST_BIN)


def levels(values: np.ndarray) -> np.ndarray:
    """Level of each k3 value: 0 is ZERO, anything above 0 but below the scale is the lowest
    bin (never "zero"), >= 1 the top bin, NaN and inf NONFINITE."""
    v = np.asarray(values, dtype=np.float64)
    out = np.full(v.shape, ZERO, dtype=np.int8)
    finite = np.isfinite(v)
    pos = finite & (v > 0)
    if pos.any():
        exp = np.clip(np.floor(np.log10(v[pos])), LOW_EXP - 1, HIGH_EXP)
        out[pos] = (FIRST_BIN + (exp - (LOW_EXP - 1))).astype(np.int8)
    out[~finite] = NONFINITE
    return out


def level_of(value: float) -> int:
    return int(levels(np.array([value]))[0])


def bin_label(level: int) -> str:
    if level == ZERO:
        return "0"
    if level == NONFINITE:
        return "nan"
    if level == PENDING:
        return "pending"
    exp = bin_exponent(level)
    if exp < LOW_EXP:
        return f"<1e{LOW_EXP}"
    if exp >= HIGH_EXP:
        return f"≥1e{HIGH_EXP}"
    return f"1e{exp}"
