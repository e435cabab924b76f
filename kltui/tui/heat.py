"""The k3 colour scale (`kltui.metrics.scale`) in the terminal: a theme's colours and the
NO_COLOR glyphs for each level, shared by the heatmap, its legend and the drill-down."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from textual.color import Color

from kltui.metrics.scale import EMPTY, N_LEVELS, NONFINITE, PENDING, ZERO, bin_exponent, ramp
from kltui.tui.themes import HEAT_STOPS, VARIABLE_DEFAULTS

# One glyph per band, for NO_COLOR terminals and glyph mode: the scale stays readable in
# monochrome and for readers who cannot tell the colours apart. Glyphs get heavier with k3 but
# stay thin enough that the cell's colour still shows around them.
_BAND_GLYPHS = ((-9, "-"), (-6, "="), (-3, "*"), (99, "#"))
GLYPH_EMPTY, GLYPH_PENDING, GLYPH_ZERO, GLYPH_NAN = " ", "~", "·", "!"
MARK_FIRST = "◆"
MARK_CURSOR = "◉"
MARK_ID = "≠"  # the server reported another token id than the one scored there


def _glyph(level: int) -> str:
    if level == EMPTY:
        return GLYPH_EMPTY
    if level == PENDING:
        return GLYPH_PENDING
    if level == ZERO:
        return GLYPH_ZERO
    if level == NONFINITE:
        return GLYPH_NAN
    exp = bin_exponent(level)
    for upper, g in _BAND_GLYPHS:
        if exp < upper:
            return g
    return _BAND_GLYPHS[-1][1]


GLYPHS = [_glyph(level) for level in range(N_LEVELS)]


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
        """The palette of a theme's heat-* variables over `background`."""

        def get(name: str) -> Color:
            return Color.parse(variables.get(name) or VARIABLE_DEFAULTS[name])

        stops = [get(f"heat-{i}").rgb for i in range(1, HEAT_STOPS + 1)]
        bins = [Color(*rgb) for rgb in ramp(stops)]  # the one scale's spread and direction
        base = Color.parse(background)
        colours = [base, get("heat-pending"), get("heat-zero"), *bins, get("heat-nan")]
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
