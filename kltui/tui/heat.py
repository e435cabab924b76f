"""The fixed k3 colour scale shared by the heatmap, its legend and the drill-down.

Levels are decades of k3 from below 1e-12 to 1 and above, so the same colour means the same
magnitude in every run, helper and screenshot. Exact zero, "decoded but not scored yet" and
non-finite values have levels of their own. This module only bins values for display; the
k3 values themselves come from the ScoreBook.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.style import Style
from textual.color import Color

from kltui.tui.themes import HEAT_STOPS, VARIABLE_DEFAULTS

LOW_EXP, HIGH_EXP = -12, 0
EMPTY, PENDING, ZERO, NAN = 0, 1, 2, 3
FIRST_BIN = 4
N_BINS = HIGH_EXP - LOW_EXP + 2  # below 1e-12, one per decade up to 1e-1, then >= 1
N_LEVELS = FIRST_BIN + N_BINS

# One glyph per band, for NO_COLOR terminals and glyph mode: the scale stays readable in
# monochrome and for readers who cannot tell the colours apart. Glyphs get heavier with k3 but
# stay thin enough that the cell's colour still shows around them.
_BAND_GLYPHS = ((-9, "-"), (-6, "="), (-3, "*"), (99, "#"))
GLYPH_EMPTY, GLYPH_PENDING, GLYPH_ZERO, GLYPH_NAN = " ", "~", "·", "!"
MARK_FIRST = "◆"
MARK_CURSOR = "◉"
MARK_ID = "≠"  # the server reported another token id than the one scored there


def bin_exponent(level: int) -> int:
    """Lower decade exponent of a bin level (LOW_EXP - 1 for the 'below 1e-12' bin)."""
    return LOW_EXP - 1 + (level - FIRST_BIN)


def _glyph(level: int) -> str:
    if level == EMPTY:
        return GLYPH_EMPTY
    if level == PENDING:
        return GLYPH_PENDING
    if level == ZERO:
        return GLYPH_ZERO
    if level == NAN:
        return GLYPH_NAN
    exp = bin_exponent(level)
    for upper, g in _BAND_GLYPHS:
        if exp < upper:
            return g
    return _BAND_GLYPHS[-1][1]


GLYPHS = [_glyph(level) for level in range(N_LEVELS)]


def levels(values: np.ndarray) -> np.ndarray:
    """Bin k3 values (already reduced per cell) into levels; NaN and inf get NAN/top."""
    v = np.asarray(values, dtype=np.float64)
    out = np.full(v.shape, ZERO, dtype=np.int8)
    nan = np.isnan(v)
    pos = v > 0
    if pos.any():
        with np.errstate(divide="ignore"):
            exp = np.floor(np.log10(v[pos]))
        exp = np.clip(exp, LOW_EXP - 1, HIGH_EXP)
        out[pos] = (FIRST_BIN + (exp - (LOW_EXP - 1))).astype(np.int8)
    out[nan] = NAN
    return out


def reduce_max(values: np.ndarray, bucket: int) -> np.ndarray:
    """Max over consecutive buckets (NaN propagates, so a fault is never averaged away)."""
    if bucket <= 1:
        return values
    n = values.size
    pad = (-n) % bucket
    if pad:
        values = np.concatenate([values, np.full(pad, -np.inf)])
    return values.reshape(-1, bucket).max(axis=1)


def level_of(value: float) -> int:
    return int(levels(np.array([value]))[0])


def bin_label(level: int) -> str:
    if level == ZERO:
        return "0"
    if level == NAN:
        return "nan"
    if level == PENDING:
        return "pending"
    exp = bin_exponent(level)
    if exp < LOW_EXP:
        return f"<1e{LOW_EXP}"
    if exp >= HIGH_EXP:
        return f"≥1e{HIGH_EXP}"
    return f"1e{exp}"


@dataclass(frozen=True)
class Palette:
    """Colours of every level for one theme, as Rich styles ready for Segments."""

    bg: tuple[Style, ...]  # solid cells: background colour
    fg: tuple[Style, ...]  # swatches in text: foreground colour
    glyph: tuple[Style, ...]  # glyph cells: heat background, readable glyph on top
    marker: Style
    cursor: Style
    colours: tuple[Color, ...]

    @classmethod
    def from_variables(cls, variables: dict[str, str], background: str) -> Palette:
        def get(name: str) -> Color:
            return Color.parse(variables.get(name) or VARIABLE_DEFAULTS[name])

        stops = [get(f"heat-{i}") for i in range(1, HEAT_STOPS + 1)]
        ramp = []
        for i in range(N_BINS):
            t = i / (N_BINS - 1) * (HEAT_STOPS - 1)
            lo = min(int(t), HEAT_STOPS - 2)
            ramp.append(stops[lo].blend(stops[lo + 1], t - lo))
        base = Color.parse(background)
        colours = [base, get("heat-pending"), get("heat-zero"), get("heat-nan"), *ramp]
        bg = [Style(bgcolor=c.rich_color) for c in colours]
        bg[EMPTY] = Style()
        fg = [Style(color=c.rich_color) for c in colours]
        fg[EMPTY] = Style()
        glyph = [
            Style(color=c.get_contrast_text(1.0).rich_color, bgcolor=c.rich_color) for c in colours
        ]
        glyph[EMPTY] = Style()
        return cls(
            bg=tuple(bg),
            fg=tuple(fg),
            glyph=tuple(glyph),
            marker=Style(color=get("heat-marker").rich_color, bold=True),
            cursor=Style(color=get("heat-cursor").rich_color, bold=True),
            colours=tuple(colours),
        )
