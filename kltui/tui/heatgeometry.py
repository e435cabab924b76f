"""Where the heatmap's cells fall: pure arithmetic on token positions, no widget, no colours.

In "fit" mode the longest row fills the width (a cell covers one token, several characters
when rows are short, or a contiguous span of tokens when they are long); a fixed zoom shows
`zoom` tokens per cell and pans. A cell covering several tokens shows their max k3 (a display
reduction: one bad token must stay visible however far you zoom out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kltui import fmt

GUTTER = 6  # "1234 " + row status glyph
MAX_CHARS_PER_CELL = 4


@dataclass(frozen=True, eq=False)
class Geometry:
    """How token positions map to cells (edges[c] = first token of cell c) and cells to chars."""

    edges: np.ndarray
    max_len: int
    chars: int  # characters per cell
    fit: bool

    @property
    def n_cells(self) -> int:
        """The number of cells."""
        return int(self.edges.size)

    def cell_of(self, pos: int) -> int:
        """The cell that covers a token position."""
        if self.edges.size == 0:
            return 0
        return max(0, int(np.searchsorted(self.edges, pos, side="right")) - 1)

    def span(self, cell: int) -> tuple[int, int]:
        """[lo, hi) token positions of a cell."""
        lo = int(self.edges[cell])
        hi = int(self.edges[cell + 1]) if cell + 1 < self.edges.size else self.max_len
        return lo, hi

    @property
    def tokens_per_cell(self) -> float:
        """How many token positions one cell covers on average."""
        return self.max_len / self.n_cells if self.n_cells else 1.0

    def reduce(self, k3: np.ndarray) -> np.ndarray:
        """Per-cell max of one row's k3 or levels (a row may be shorter than max_len)."""
        edges = self.edges[self.edges < k3.size]
        if edges.size == 0:
            return np.zeros(0)
        if edges.size == k3.size:
            return k3
        return np.maximum.reduceat(k3, edges)

    def n_cells_for(self, length: int) -> int:
        """The number of cells a row of this length fills."""
        return int(np.searchsorted(self.edges, length, side="left"))


def make_geometry(max_len: int, cell_chars_available: int, zoom: int | None) -> Geometry:
    """The cell layout for rows up to max_len in the available width, at a zoom."""
    width = max(1, cell_chars_available)
    if max_len <= 0:
        return Geometry(np.zeros(0, dtype=np.int64), 0, 1, zoom is None)
    if zoom is None:
        if max_len <= width:
            chars = max(1, min(MAX_CHARS_PER_CELL, width // max_len))
            return Geometry(np.arange(max_len, dtype=np.int64), max_len, chars, True)
        edges = (np.arange(width, dtype=np.int64) * max_len) // width
        return Geometry(edges, max_len, 1, True)
    return Geometry(np.arange(0, max_len, zoom, dtype=np.int64), max_len, 1, False)


@dataclass(frozen=True)
class View:
    """What the heatmap currently shows, for the ruler and the cursor line."""

    geometry: Geometry
    first_cell: int
    cells: int  # cells visible


def ruler_line(view: View, gutter: int = GUTTER) -> str:
    """Token positions above the columns, at round numbers spaced for legibility."""
    g = view.geometry
    width = gutter + view.cells * g.chars
    line = [" "] * width
    if g.n_cells == 0:
        return "".join(line)
    lo = int(g.edges[min(view.first_cell, g.n_cells - 1)])
    last = min(view.first_cell + view.cells, g.n_cells) - 1
    hi = g.span(last)[1]
    step = fmt.nice_step(g.tokens_per_cell / g.chars * 8)
    start = ((lo + step - 1) // step) * step
    for pos in range(start, hi, step):
        x = gutter + (g.cell_of(pos) - view.first_cell) * g.chars
        label = str(pos)
        if x + len(label) > width or x < gutter:
            continue
        line[x : x + len(label)] = label
    return "".join(line)
