"""The one k3 colour scale: fixed decades, the same in the TUI heatmap, its legend, the
drill-down and the HTML report, so a colour means the same magnitude in every run, helper and
screenshot.

This module says which level a token falls in, what "zero" means (`token_levels`: the two
logprobs are bit-equal; a 1-ulp difference is not zero even where k3 rounds to 0), and how a
palette's stops spread over the decade bins (`ramp`: low = calm, high = alarm, in every
theme and in the report). The report's colours are `LIGHT`, the kltui-light theme's.

Levels are ordered by severity (nothing < not scored < exact zero < decades < non-finite), so
the max over a bucket of levels is its worst cell and zooming out never hides a fault.
"""

from __future__ import annotations

import numpy as np

LOW_EXP, HIGH_EXP = -12, 0
EMPTY, PENDING, ZERO = 0, 1, 2  # no token here; decoded but not scored; bit-equal logprobs
FIRST_BIN = 3
N_BINS = HIGH_EXP - LOW_EXP + 2  # below 1e-12, one per decade up to 1e-1, then >= 1
NONFINITE = FIRST_BIN + N_BINS  # NaN or inf: a protocol or numeric fault
N_LEVELS = NONFINITE + 1


def bin_exponent(level: int) -> int:
    """Lower decade exponent of a bin level (LOW_EXP - 1 for the 'below 1e-12' bin)."""
    return LOW_EXP - 1 + (level - FIRST_BIN)


def levels(values: np.ndarray) -> np.ndarray:
    """Level of each k3 value: 0 is ZERO, anything above 0 but below the scale is the lowest
    bin (never "zero"), >= 1 the top bin, NaN and inf NONFINITE. For tokens, whose zero is
    bit-equal logprobs, use `token_levels`."""
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
    """Level of one k3 value (`levels` of a single number)."""
    return int(levels(np.array([value]))[0])


def bit_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element: are the two numbers the same bits (float64 bits if the dtypes differ)?
    -0.0 vs 0.0 and NaN payloads count as different, as they are on the wire."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype.kind != "f":
        a, b = a.astype(np.float64), b.astype(np.float64)
    as_int = np.dtype(f"u{a.dtype.itemsize}")
    return a.view(as_int) == b.view(as_int)


def token_levels(k3: np.ndarray, lp_a: np.ndarray, lp_b: np.ndarray) -> np.ndarray:
    """Level of each scored token: ZERO only where the two logprobs are bit-equal; a difference
    too small for k3 to register (k3 == 0.0 or a rounding-negative k3) is the lowest bin."""
    out = levels(k3)
    out[out == ZERO] = FIRST_BIN
    same = bit_equal(lp_a, lp_b) & (out != NONFINITE)
    out[same] = ZERO
    return out


def bucket_levels(
    k3: np.ndarray, lp_a: np.ndarray, lp_b: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """The worst `token_levels` of each bucket of tokens (bucket i starts at starts[i], which
    ascend below len(k3)), from the bucket's max k3 and whether any of its tokens differ: the
    same result without a level per token (levels are monotone in k3)."""
    if starts.size == 0:
        return np.zeros(0, dtype=np.int8)
    if starts.size == k3.size:
        return token_levels(k3, lp_a, lp_b)
    out = levels(np.maximum.reduceat(k3, starts))  # NaN propagates: NONFINITE
    differs = np.logical_or.reduceat(~bit_equal(lp_a, lp_b), starts)
    out[(out == ZERO) & differs] = FIRST_BIN
    return out


def ramp(stops: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """RGB of each decade bin, lowest first: the stops (calm to alarm) spread evenly over the
    N_BINS bins, linear in between (truncated to ints, as Textual's Color.blend does)."""
    out = []
    for i in range(N_BINS):
        t = i / (N_BINS - 1) * (len(stops) - 1)
        lo = min(int(t), len(stops) - 2)
        f = t - lo
        (r1, g1, b1), (r2, g2, b2) = stops[lo], stops[lo + 1]
        out.append((int(r1 + (r2 - r1) * f), int(g1 + (g2 - g1) * f), int(b1 + (b2 - b1) * f)))
    return out


# The scale on a light background (the HTML report, the kltui-light theme; a test keeps
# themes/kltui-light.yaml equal to it): pale blue for rounding-level k3, dark red for >= 1.
LIGHT = {
    "heat-zero": "#b7e4c7",
    "heat-pending": "#d0d7de",
    "heat-nan": "#c800c8",
    "heat-1": "#e8f1fb",
    "heat-2": "#c6dbef",
    "heat-3": "#9ecae1",
    "heat-4": "#6baed6",
    "heat-5": "#fdd49e",
    "heat-6": "#fc8d59",
    "heat-7": "#e34a33",
    "heat-8": "#a50f15",
}
LIGHT_STOPS = 8  # heat-1 .. heat-8


def hex_rgb(colour: str) -> tuple[int, int, int]:
    """(r, g, b) of a "#rrggbb" colour."""
    h = colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def light_palette() -> list[tuple[int, int, int]]:
    """RGB of every level on a white page (EMPTY is white), indexed by level."""
    out = [(255, 255, 255)] * N_LEVELS
    out[PENDING] = hex_rgb(LIGHT["heat-pending"])
    out[ZERO] = hex_rgb(LIGHT["heat-zero"])
    stops = [hex_rgb(LIGHT[f"heat-{i}"]) for i in range(1, LIGHT_STOPS + 1)]
    out[FIRST_BIN:NONFINITE] = ramp(stops)
    out[NONFINITE] = hex_rgb(LIGHT["heat-nan"])
    return out


def bin_label(level: int) -> str:
    """Legend text of a level ("0", "1e-7", "<1e-12", "nan", ...)."""
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
