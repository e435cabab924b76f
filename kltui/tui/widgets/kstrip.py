"""The drill-down's strip of one sample's k3 along its positions, on the one fixed k3 scale.

Textual's Sparkline scales bar heights and colours to the data's own minimum and maximum, so
a sample whose worst token is k3 2e-11 drew that bar full height in the alarm colour, which on
the heatmap means k3 >= 1. Here a bar's height is log10 k3 on the fixed decades of
`kltui.metrics.scale` and its colour is the heatmap's colour of that level: the same k3 looks
the same on every screen and in every sample.
"""

from __future__ import annotations

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from kltui.metrics import scale
from kltui.tui import heat

BARS = " ▁▂▃▄▅▆▇█"
ROWS = 3  # the strip's height in lines: 24 steps from the floor to k3 >= 1


def columns(
    k3: np.ndarray, lp_a: np.ndarray, lp_b: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """(height in eighths of a line, level) of each of `width` columns: the max k3 of the
    positions a column covers (each position over several columns when there are fewer)."""
    n = int(k3.size)
    if n == 0 or width <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8)
    if n <= width:
        at = (np.arange(width) * n) // width
        values, levels = k3[at], scale.token_levels(k3, lp_a, lp_b)[at]
    else:
        starts = (np.arange(width) * n) // width
        values = np.maximum.reduceat(k3, starts)  # NaN propagates: a fault shows
        levels = scale.bucket_levels(k3, lp_a, lp_b, starts)
    floor = scale.LOW_EXP - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = np.log10(np.where(values > 0, values, 1.0))
    exp = np.clip(np.where(values > 0, exp, floor), floor, scale.HIGH_EXP)
    steps = ROWS * 8
    height = np.rint((exp - floor) / (scale.HIGH_EXP - floor) * steps).astype(np.int64)
    height = np.where(levels == scale.ZERO, 0, np.maximum(height, 1))  # differs: never blank
    height = np.where(levels == scale.NONFINITE, steps, height)
    return height, levels


class K3Strip(Widget):
    """log10 k3 along a sample: bar height on the fixed decades, colour the heatmap's."""

    def __init__(
        self,
        k3: np.ndarray,
        lp_a: np.ndarray,
        lp_b: np.ndarray,
        palette: heat.Palette | None,
        *,
        stretch: bool = True,
        **kw,
    ) -> None:
        """`stretch`: the values spread over the whole width (a sample's positions); else one
        column per value, the last ones that fit (a history, newest at the right)."""
        super().__init__(**kw)
        self.k3, self.lp_a, self.lp_b = k3, lp_a, lp_b
        self.palette = palette
        self.stretch = stretch

    def render(self) -> Text:
        """ROWS lines of bars, the top line first."""
        width = self.size.width
        k3, lp_a, lp_b = self.k3, self.lp_a, self.lp_b
        if not self.stretch:
            k3, lp_a, lp_b = k3[-width:], lp_a[-width:], lp_b[-width:]
            width = min(width, int(k3.size))
        height, levels = columns(k3, lp_a, lp_b, width)
        pal = self.palette
        styles = [pal.fg[int(lv)] if pal else Style() for lv in levels]
        zero = pal.fg[scale.ZERO] if pal else Style()
        lines = []
        for row in range(ROWS - 1, -1, -1):
            t = Text(no_wrap=True)
            for h, style, lv in zip(height.tolist(), styles, levels.tolist(), strict=True):
                if lv == scale.ZERO and row == 0:
                    t.append("·", style=zero)  # bit-identical: on the floor, in its colour
                    continue
                eighths = min(8, max(0, h - row * 8))
                t.append(BARS[eighths], style=style)
            lines.append(t)
        return Text("\n").join(lines)
