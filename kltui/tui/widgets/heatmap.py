"""Token-level k3 heatmap: rows = samples, columns = generated positions.

A line-API ScrollView: only visible rows are rendered, and each row's Strip is cached under a
key holding everything it depends on (run, helper, row contents, geometry, pan, width, theme,
cursor), so a redraw after a TokensDecoded event re-renders only the rows that changed.

Which positions a cell covers is `kltui.tui.heatgeometry` (pure, tested on its own).
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kltui.metrics import scale
from kltui.session.store import HelperState
from kltui.tui import heat
from kltui.tui.heatgeometry import GUTTER, Geometry, View, make_geometry, ruler_line
from kltui.tui.widgets.heatnav import HeatmapNavigation

ROW_STATUS = {"scored": " ", "decoding": "…", "skipped": "⊘", "pending": " "}


class Heatmap(HeatmapNavigation, ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up,k", "cursor(0, -1)", "Up", show=False, id="heatmap.up"),
        Binding("down,j", "cursor(0, 1)", "Down", show=False, id="heatmap.down"),
        Binding("left,h", "cursor(-1, 0)", "Left", show=False, id="heatmap.left"),
        Binding("right,l", "cursor(1, 0)", "Right", show=False, id="heatmap.right"),
        Binding("shift+left", "pan(-1)", "Pan left", show=False, id="heatmap.pan-left"),
        Binding("shift+right", "pan(1)", "Pan right", show=False, id="heatmap.pan-right"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="heatmap.page-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="heatmap.page-down"),
        Binding("home", "row_edge(0)", "Row start", show=False, id="heatmap.home"),
        Binding("end", "row_edge(1)", "Row end", show=False, id="heatmap.end"),
        Binding("plus,equals_sign", "zoom(-1)", "Zoom in", key_display="+", id="heatmap.zoom-in"),
        Binding("minus", "zoom(1)", "Zoom out", key_display="-", id="heatmap.zoom-out"),
        Binding("0", "zoom_fit", "Fit", id="heatmap.zoom-fit"),
        Binding("g", "toggle_glyphs", "Glyphs", show=False, id="heatmap.glyphs"),
        Binding("enter", "open", "Drill down", id="heatmap.open"),
    ]

    DEFAULT_CSS = """
    Heatmap {
        background: $surface;
        scrollbar-size-horizontal: 1;
        scrollbar-size-vertical: 1;
    }
    """

    glyphs = reactive(False)

    class Open(Message):
        """Enter or double click on a cell: drill down into `sample` at `position`."""

        def __init__(self, sample: int, position: int | None) -> None:
            super().__init__()
            self.sample, self.position = sample, position

    class ViewChanged(Message):
        """Pan, zoom, cursor or data changed: the ruler and cursor line follow."""

    def __init__(self, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.state: HelperState | None = None
        self.run_gen = 0
        self.zoom: int | None = None  # tokens per cell; None fits the longest row to the width
        self.cursor_row = 0
        self.cursor_pos = 0
        self._strips: LRUCache[tuple, Strip] = LRUCache(4096)
        self._levels: LRUCache[tuple, np.ndarray] = LRUCache(2048)
        self._palette: heat.Palette | None = None
        self._theme_gen = 0
        self._max_len = 0
        self._n_rows = 0
        self._geometry: Geometry | None = None
        self._geometry_key: tuple | None = None
        self._styles_key: tuple | None = None
        self._cell_styles: list[Style] = []
        self._segments: list[dict[int, Segment]] = []
        self._painted: dict[int, tuple] = {}  # visible row -> signature last painted
        self._painted_view: tuple | None = None
        self._frame_key: tuple | None = None
        self._frame_value: tuple = ()

    # ------------------------------------------------------------------ data
    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        if getattr(self.app, "no_color", False):
            self.glyphs = True

    def _theme_changed(self, _theme) -> None:
        self._palette = None
        self._theme_gen += 1
        self._strips.clear()
        self._full_refresh()
        self.post_message(self.ViewChanged())

    def watch_glyphs(self) -> None:
        self._strips.clear()
        self._full_refresh()
        self.post_message(self.ViewChanged())

    def _full_refresh(self) -> None:
        self._painted = {}
        self._painted_view = None
        self.refresh()

    @property
    def palette(self) -> heat.Palette:
        if self._palette is None:
            variables = self.app.get_css_variables()
            self._palette = heat.Palette.from_variables(
                variables, variables.get("surface", "#000000")
            )
        return self._palette

    def show(self, state: HelperState | None, run_gen: int) -> None:
        """Point the view at a helper (or refresh it after new events)."""
        changed = state is not self.state or run_gen != self.run_gen
        self.state, self.run_gen = state, run_gen
        if changed:
            self.cursor_row = 0
            self.cursor_pos = 0
            self.scroll_to(0, 0, animate=False)
        n_rows, max_len = self._extent()
        if (n_rows, max_len) != (self._n_rows, self._max_len) or changed:
            self._n_rows, self._max_len = n_rows, max_len
            self._update_virtual_size()
            self._full_refresh()
        else:
            self._refresh_changed_rows()
        self.post_message(self.ViewChanged())

    def _view_key(self) -> tuple:
        return (
            self.run_gen,
            self._geometry_key,
            self.first_cell,
            int(self.scroll_offset.y),
            self.size,
            self.cursor_row,
            self.cursor_pos,
            self.has_focus,
        )

    def _refresh_changed_rows(self) -> None:
        """Repaint only rows whose data changed since they were painted (a live run touches
        a few rows per tick; repainting all of them would redo every visible cell)."""
        if self._painted_view != self._view_key():
            self._full_refresh()
            return
        top = int(self.scroll_offset.y)
        for row, sig in list(self._painted.items()):
            if row < self._n_rows and self._row_signature(row) != sig:
                self.refresh_lines(row, 1)
                del self._painted[row]
        for row in range(top, min(self._n_rows, top + self.size.height)):
            if row not in self._painted:
                self.refresh_lines(row, 1)

    def _extent(self) -> tuple[int, int]:
        st = self.state
        if st is None:
            return 0, 0
        known = set(st.book.samples) | set(st.decoded_len) | set(st.skipped)
        n_rows = max(st.n_samples, (max(known) + 1) if known else 0)
        expected = int(st.settings.get("max_new_tokens") or 0)
        longest = max((st.row_length(s) for s in known), default=0)
        return n_rows, max(expected, longest)

    @property
    def cell_area(self) -> int:
        """Characters available for cells (the row gutter does not scroll)."""
        return max(1, self.scrollable_content_region.width - GUTTER)

    @property
    def geometry(self) -> Geometry:
        key = (self._max_len, self.cell_area, self.zoom)
        if key != self._geometry_key or self._geometry is None:
            self._geometry = make_geometry(self._max_len, self.cell_area, self.zoom)
            self._geometry_key = key
        return self._geometry

    def _update_virtual_size(self) -> None:
        g = self.geometry
        self.virtual_size = Size(GUTTER + g.n_cells * g.chars, self._n_rows)

    def on_resize(self, _event: events.Resize) -> None:
        self._update_virtual_size()
        self.post_message(self.ViewChanged())

    @property
    def first_cell(self) -> int:
        return int(self.scroll_offset.x) // self.geometry.chars

    def view(self) -> View:
        g = self.geometry
        return View(g, self.first_cell, self.cell_area // g.chars)

    def row_status(self, sample: int) -> str:
        st = self.state
        if st is None:
            return "pending"
        if sample in st.book.samples:
            return "scored"
        if sample in st.skipped:
            return "skipped"
        if st.decoded_len.get(sample):
            return "decoding"
        return "pending"

    # ------------------------------------------------------------------ rendering
    def _row_signature(self, sample: int) -> tuple:
        st = self.state
        scored = st.book.samples.get(sample)
        if scored is not None:
            return ("s", id(scored))
        if sample in st.skipped:
            return ("k",)
        return ("d", st.decoded_len.get(sample, 0))

    def _row_levels(self, sample: int, sig: tuple) -> np.ndarray:
        g = self.geometry
        key = (self.run_gen, self.state.key, sample, self._geometry_key, sig)
        cached = self._levels.get(key)
        if cached is not None:
            return cached
        scored = self.state.book.samples.get(sample)
        if scored is not None:
            out = scale.levels(g.reduce(scored.k3))
        else:
            n = g.n_cells_for(self.state.decoded_len.get(sample, 0))
            out = np.full(n, scale.PENDING, dtype=np.int8)
        self._levels[key] = out
        return out

    def _frame(self) -> tuple[int, Geometry, int, int, Style]:
        """Per-paint constants (computing them per line showed up in profiles)."""
        key = (self.size, self.scroll_offset, self._max_len, self.zoom, self._theme_gen)
        if key != self._frame_key:
            g = self.geometry
            self._frame_value = (
                self.scrollable_content_region.width,
                g,
                int(self.scroll_offset.x) // g.chars,
                int(self.scroll_offset.y),
                self.rich_style,
            )
            self._frame_key = key
        return self._frame_value

    def render_line(self, y: int) -> Strip:
        width, g, first, top, base = self._frame()
        row = top + y
        st = self.state
        if st is None or row >= self._n_rows:
            return Strip.blank(width, base)
        sig = self._row_signature(row)
        cursor_cell = g.cell_of(self.cursor_pos) if row == self.cursor_row else -1
        key = (
            self.run_gen,
            st.key,
            row,
            sig,
            self._geometry_key,
            first,
            width,
            self._theme_gen,
            self.glyphs,
            cursor_cell,
            cursor_cell >= 0 and self.has_focus,
        )
        strip = self._strips.get(key)
        if strip is None:
            strip = self._render_row(row, sig, g, first, width, cursor_cell)
            self._strips[key] = strip
        self._painted[row] = sig
        if self._painted_view is None:
            self._painted_view = self._view_key()
        return strip

    def _styles(self) -> list[Style]:
        """Cell styles combined with the widget's own style once per theme, not per cell."""
        base = self._frame()[4]
        key = (self._theme_gen, self.glyphs, base)
        if key != self._styles_key:
            pal = self.palette
            levels = pal.glyph if self.glyphs else pal.bg
            self._cell_styles = [base + st for st in levels]
            self._segments = [{} for _ in levels]
            self._styles_key = key
        return self._cell_styles

    def _render_row(
        self, row: int, sig: tuple, g: Geometry, first: int, width: int, cursor_cell: int
    ) -> Strip:
        st = self.state
        pal = self.palette
        base = self._frame()[4]
        status = self.row_status(row)
        if cursor_cell >= 0:
            label_style = base + Style(bold=True, reverse=self.has_focus)
        else:
            label_style = base + Style(dim=status != "scored")
        segments = [
            Segment(f"{row:>4} ", label_style),
            Segment(ROW_STATUS[status], base + Style(dim=True)),
        ]
        n_vis = max(0, (width - GUTTER) // g.chars)
        if status == "skipped":
            reason = st.skipped.get(row, "")
            text = f" skipped: {reason}"[: max(0, width - GUTTER)]
            segments.append(Segment(text, base + Style(dim=True, italic=True)))
            return Strip(segments).adjust_cell_length(width, base)
        lv = self._row_levels(row, sig)
        vis = np.zeros(n_vis, dtype=np.int16)
        chunk = lv[first : first + n_vis]
        vis[: chunk.size] = chunk
        # Marks get codes of their own so that they form separate runs.
        codes = vis.copy()
        marks: dict[int, str] = {}
        scored = st.book.samples.get(row)
        if scored is not None and scored.id_mismatch:
            for pos, _reported in scored.id_mismatch:
                c = g.cell_of(pos) - first
                if 0 <= c < n_vis:
                    marks[c] = heat.MARK_ID
        if scored is not None and scored.metrics.first_divergence is not None:
            c = g.cell_of(scored.metrics.first_divergence) - first
            if 0 <= c < n_vis:
                marks[c] = heat.MARK_FIRST
        if cursor_cell >= 0 and 0 <= cursor_cell - first < n_vis:
            marks[cursor_cell - first] = heat.MARK_CURSOR
        for c in marks:
            codes[c] = -1 - c
        segments.extend(self._cell_segments(vis, codes, marks, pal, g.chars))
        used = GUTTER + n_vis * g.chars
        if used < width:
            segments.append(Segment(" " * (width - used), base))
        return Strip(segments, width)

    def _cell_segments(
        self,
        vis: np.ndarray,
        codes: np.ndarray,
        marks: dict[int, str],
        pal: heat.Palette,
        chars: int,
    ) -> list[Segment]:
        if vis.size == 0:
            return []
        starts = np.concatenate([[0], np.flatnonzero(np.diff(codes)) + 1])
        lengths = (np.diff(np.append(starts, codes.size)) * chars).tolist()
        run_levels = vis[starts].tolist()
        styles = self._styles()
        fill = heat.GLYPHS if self.glyphs else [" "] * scale.N_LEVELS
        # Runs repeat (same level, same length) across rows: reuse their Segments.
        cache = self._segments
        out: list[Segment] = []
        append = out.append
        for n, level in zip(lengths, run_levels, strict=True):
            seg = cache[level].get(n)
            if seg is None:
                seg = cache[level][n] = Segment(fill[level] * n, styles[level])
            append(seg)
        for c, mark in marks.items():
            i = int(np.searchsorted(starts, c))
            level = run_levels[i]
            mstyle = pal.cursor if mark == heat.MARK_CURSOR else pal.marker
            out[i] = Segment(mark + " " * (chars - 1), styles[level] + mstyle)
        return out

    def clear_cache(self) -> None:
        self._strips.clear()
        self._levels.clear()

    # ------------------------------------------------------------------ navigation


def ruler(view: View, gutter: int = GUTTER) -> Text:
    """Token positions above the columns, at round numbers spaced for legibility."""
    return Text(ruler_line(view, gutter), no_wrap=True, overflow="crop", style="dim")
