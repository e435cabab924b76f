"""The heatmap's cursor, pan, zoom and click handling (the keys are Heatmap.BINDINGS).

A mixin of `Heatmap`: it moves `cursor_row`/`cursor_pos` and `zoom` and asks the widget to
redraw; what a cell covers comes from the widget's `geometry` (`kltui.tui.heatgeometry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from textual import events

from kltui.tui.heatgeometry import GUTTER
from kltui.words.screen_heatmap import NoZoom, no_zoom

if TYPE_CHECKING:
    from textual.message import Message
    from textual.reactive import reactive
    from textual.scroll_view import ScrollView

    from kltui.session.store import HelperState
    from kltui.tui.heatgeometry import Geometry

    class HeatmapHost(ScrollView):
        """Heatmap's state and methods as HeatmapNavigation sees them (for the type checker
        only: mypy checks Heatmap's own definitions against these)."""

        class Open(Message):
            """Drill down into `sample` at `position` (heatmap.py)."""

            def __init__(self, sample: int, position: int | None) -> None: ...

        class ViewChanged(Message):
            """Pan, zoom, cursor or data changed (heatmap.py)."""

        glyphs: reactive[bool] = reactive(False)
        state: HelperState | None
        zoom: int | None  # tokens per cell; None fits the longest row
        cursor_row: int
        cursor_pos: int
        _n_rows: int
        _max_len: int

        @property
        def cell_area(self) -> int:
            """Characters available for cells (heatmap.py)."""

        @property
        def geometry(self) -> Geometry:
            """The cell layout (heatmap.py)."""

        @property
        def first_cell(self) -> int:
            """The first cell in view (heatmap.py)."""

        def _full_refresh(self) -> None:
            """Repaint every row (heatmap.py)."""

        def _update_virtual_size(self) -> None:
            """Resize the scrollable area (heatmap.py)."""

else:
    HeatmapHost = object


@runtime_checkable
class SaysLast(Protocol):
    """An app that keeps the last message it gave the user (KltuiApp)."""

    last_message: str


class HeatmapNavigation(HeatmapHost):
    """The heatmap's cursor, scrolling and zoom (a mixin of Heatmap; its host's part:
    HeatmapHost)."""

    # why the last +, - or 0 changed nothing; the panel's status line shows it until the
    # next move
    zoom_note: str | None = None

    def _clamp_cursor(self) -> None:
        self.cursor_row = max(0, min(self.cursor_row, self._n_rows - 1))
        self.cursor_pos = max(0, min(self.cursor_pos, max(0, self._max_len - 1)))

    def _follow_cursor(self) -> None:
        self.zoom_note = None
        g = self.geometry
        cell = g.cell_of(self.cursor_pos)
        first = self.first_cell
        visible = max(1, self.cell_area // g.chars)
        if cell < first:
            first = cell
        elif cell >= first + visible:
            first = cell - visible + 1
        y = self.scroll_offset.y
        height = self.scrollable_content_region.height
        if self.cursor_row < y:
            y = self.cursor_row
        elif self.cursor_row >= y + height:
            y = self.cursor_row - height + 1
        self.scroll_to(first * g.chars, y, animate=False, immediate=True)
        self._full_refresh()
        self.post_message(self.ViewChanged())

    def move_to(self, sample: int, position: int | None = None) -> None:
        """Put the cursor on a sample, at a position."""
        self.cursor_row = sample
        if position is not None:
            self.cursor_pos = position
        self._clamp_cursor()
        self._follow_cursor()

    def action_cursor(self, dx: int, dy: int) -> None:
        """Move the cursor by cells and rows."""
        self.cursor_row += dy
        if dx:
            g = self.geometry
            cell = max(0, min(g.cell_of(self.cursor_pos) + dx, g.n_cells - 1))
            self.cursor_pos = g.span(cell)[0] if g.n_cells else 0
        self._clamp_cursor()
        self._follow_cursor()

    def action_page(self, direction: int) -> None:
        """Move the cursor a screen up or down."""
        self.action_cursor(0, direction * max(1, self.scrollable_content_region.height - 1))

    def action_pan(self, direction: int) -> None:
        """Scroll half a screen left or right."""
        self.zoom_note = None
        g = self.geometry
        step = max(1, self.cell_area // 2) * direction
        self.scroll_to(self.scroll_offset.x + step, None, animate=False, immediate=True)
        first = self.first_cell
        visible = max(1, self.cell_area // g.chars)
        cell = g.cell_of(self.cursor_pos)
        if not first <= cell < first + visible and g.n_cells:
            self.cursor_pos = g.span(min(first, g.n_cells - 1))[0]
        self._full_refresh()
        self.post_message(self.ViewChanged())

    def action_row_edge(self, end: int) -> None:
        """Move the cursor to the start or end of its row."""
        length = self.state.row_length(self.cursor_row) if self.state else 0
        self.cursor_pos = max(0, length - 1) if end else 0
        self._clamp_cursor()
        self._follow_cursor()

    def action_zoom(self, direction: int) -> None:
        """Zoom in (fewer tokens per cell) or out."""
        g = self.geometry
        per_cell = g.tokens_per_cell if self.zoom is None else float(self.zoom)
        if direction < 0:  # in: fewer tokens per cell
            if per_cell <= 1:
                self._no_zoom("zoom in")
                return
            p = 1
            while p * 2 < per_cell:
                p *= 2
            self.zoom = p
        else:
            if self.zoom is None:
                self._no_zoom("zoom out")
                return
            new = self.zoom * 2
            fit_per_cell = self._max_len / self.cell_area
            self.zoom = None if new >= fit_per_cell else new
        self._update_virtual_size()
        self._follow_cursor()

    def action_zoom_fit(self) -> None:
        """Zoom to fit the longest row."""
        if self.zoom is None:
            self._no_zoom("fit")
            return
        self.zoom = None
        self._update_virtual_size()
        self._follow_cursor()

    def _no_zoom(self, what: str) -> None:
        """A zoom key that cannot change the view says why, in the panel's status line."""
        n, width = self._max_len, self.cell_area
        if n == 0:
            kind = NoZoom.NO_POSITIONS
        elif n <= width:
            kind = NoZoom.ALL_FIT
        elif what == "zoom in":
            kind = NoZoom.MOST_IN
        else:
            kind = NoZoom.ALREADY_FIT
        self.zoom_note = no_zoom(what, kind, n, width)
        if isinstance(self.app, SaysLast):  # the dashboard (its tests read it)
            self.app.last_message = self.zoom_note
        self.app.bell()
        self.post_message(self.ViewChanged())

    def action_toggle_glyphs(self) -> None:
        """Switch between colours and glyphs."""
        self.glyphs = not self.glyphs

    def action_open(self) -> None:
        """Open the drill-down of the cell under the cursor."""
        if self.state is not None and self._n_rows:
            self.post_message(self.Open(self.cursor_row, self.cursor_max_position()))

    def cursor_max_position(self) -> int | None:
        """The position inside the cursor's cell holding the largest k3 (what the cell shows)."""
        st = self.state
        scored = st.book.samples.get(self.cursor_row) if st else None
        if scored is None or scored.k3.size == 0:
            return self.cursor_pos
        lo, hi = self.geometry.span(self.geometry.cell_of(self.cursor_pos))
        seg = scored.k3[lo:hi]
        if seg.size == 0:
            return min(self.cursor_pos, scored.k3.size - 1)
        safe = np.where(np.isnan(seg), np.inf, seg)
        return lo + int(np.argmax(safe))

    def on_click(self, event: events.Click) -> None:
        """Move the cursor to the clicked cell."""
        offset = event.get_content_offset(self)
        if offset is None or self.state is None:
            return
        row = int(self.scroll_offset.y) + offset.y
        if row >= self._n_rows:
            return
        self.cursor_row = row
        g = self.geometry
        if offset.x >= GUTTER and g.n_cells:
            cell = min(self.first_cell + (offset.x - GUTTER) // g.chars, g.n_cells - 1)
            self.cursor_pos = g.span(cell)[0]
        self._clamp_cursor()
        self._follow_cursor()
        if event.chain >= 2:
            self.action_open()

    def on_focus(self) -> None:
        """Redraw: the cursor shows only with the focus."""
        self._full_refresh()

    def on_blur(self) -> None:
        """Redraw: the cursor shows only with the focus."""
        self._full_refresh()
