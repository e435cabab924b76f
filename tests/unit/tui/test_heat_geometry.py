"""The heatmap's geometry (kltui.tui.heatgeometry): which token positions each cell covers.

Pure functions, no widget: these run without Textual."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kltui.tui.heatgeometry import View, make_geometry, ruler_line


def test_geometry_fit_covers_every_token_and_keeps_the_max():
    k3 = np.zeros(2048)
    k3[1234] = 0.5
    k3[77] = np.nan
    g = make_geometry(2048, 194, None)
    assert g.n_cells == 194 and g.chars == 1 and g.edges[0] == 0
    cells = g.reduce(k3)
    assert cells.size == 194
    assert cells[g.cell_of(1234)] == 0.5  # a single bad token survives aggregation
    assert math.isnan(cells[g.cell_of(77)])
    lo, hi = g.span(g.cell_of(1234))
    assert lo <= 1234 < hi
    # a short row uses wider cells instead of leaving the panel empty
    short = make_geometry(32, 100, None)
    assert short.chars == 3 and short.n_cells == 32
    zoomed = make_geometry(2048, 194, 4)
    assert zoomed.n_cells == 512 and zoomed.span(1) == (4, 8)
    assert zoomed.reduce(k3[:10]).size == 3  # rows shorter than max_len


def test_ruler_labels_round_positions():
    g = make_geometry(2048, 194, None)
    text = ruler_line(View(g, 0, 194))
    assert text.split()[:3] == ["0", "100", "200"]


@pytest.mark.parametrize(
    ("max_len", "width", "zoom"),
    [
        (1, 10, None),
        (7, 100, None),
        (100, 100, None),
        (101, 100, None),
        (5000, 193, None),
        (5000, 193, 1),
        (5000, 193, 3),
        (5000, 193, 64),
    ],
)
def test_cells_partition_the_positions(max_len, width, zoom):
    g = make_geometry(max_len, width, zoom)
    assert g.edges[0] == 0 and np.all(np.diff(g.edges) > 0)
    covered = [p for c in range(g.n_cells) for p in range(*g.span(c))]
    assert covered == list(range(max_len))  # every position in exactly one cell, in order
    assert all(lo <= p < hi for p in range(max_len) for lo, hi in [g.span(g.cell_of(p))])
    if zoom is None:
        assert g.n_cells * g.chars <= max(width, 1)  # fit: never wider than the panel
    assert g.n_cells_for(max_len) == g.n_cells
    assert g.n_cells_for(0) == 0


def test_reduce_is_the_per_cell_max_and_never_hides_nan():
    k3 = np.arange(20, dtype=np.float64)
    k3[13] = np.nan
    g = make_geometry(20, 5, None)  # 4 tokens per cell
    cells = g.reduce(k3)
    assert cells.tolist()[:3] == [3.0, 7.0, 11.0] and math.isnan(cells[3]) and cells[4] == 19.0


def test_empty_rows_have_no_cells():
    g = make_geometry(0, 80, None)
    assert g.n_cells == 0 and g.reduce(np.zeros(0)).size == 0
    assert ruler_line(View(g, 0, 0), 6) == " " * 6
