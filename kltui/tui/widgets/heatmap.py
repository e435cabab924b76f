"""Token-level k3 heatmap: rows = samples, columns = generated positions.

A line-API ScrollView: only visible rows are rendered, and each row's Strip is cached under a
key holding everything it depends on (run, helper, row contents, geometry, pan, width, theme,
cursor), so a redraw after a TokensDecoded event re-renders only the rows that changed. The
widget also keeps the strips after Textual's line filters (`render_lines`): a full refresh (pan,
cursor move) then costs a dictionary lookup per unchanged row, not a filter pass per cell.

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
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kltui.metrics import scale
from kltui.session.store import HelperState
from kltui.tui import heat
from kltui.tui.heatgeometry import GUTTER, Geometry, View, make_geometry, ruler_line
from kltui.tui.widgets.heatcells import CellSegments, Filtering
from kltui.tui.widgets.heatnav import HeatmapNavigation

ROW_STATUS = {"scored": " ", "decoding": "…", "skipped": "⊘", "pending": " "}


# the three zoom keys share one footer entry ("+-0 Zoom"): 80 columns must show every key
ZOOM = Binding.Group("Zoom", compact=True)


class Heatmap(HeatmapNavigation, ScrollView, can_focus=True):
    """One row per sample, one cell per group of tokens, coloured by k3."""

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
        Binding(
            "plus,equals_sign",
            "zoom(-1)",
            "Zoom in",
            key_display="+",
            id="heatmap.zoom-in",
            group=ZOOM,
        ),
        Binding("minus", "zoom(1)", "Zoom out", key_display="-", id="heatmap.zoom-out", group=ZOOM),
        Binding("0", "zoom_fit", "Fit", id="heatmap.zoom-fit", group=ZOOM),
        Binding("g", "toggle_glyphs", "Glyphs", show=False, id="heatmap.glyphs"),
        Binding("enter", "open", "Drill down", id="heatmap.open"),
    ]

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
        self._strips: LRUCache[tuple, Strip] = LRUCache(1024)
        # final strips (after Textual's line filters), keyed by the content strip's key and
        # what the filters and styles depend on: an unchanged view repaints from here
        self._final: LRUCache[tuple, Strip] = LRUCache(1024)
        # the Segments rows are made of, filtered once each (heatcells.py)
        self._cells = CellSegments()
        self._levels: LRUCache[tuple, np.ndarray] = LRUCache(2048)
        self._palette: heat.Palette | None = None
        self._theme_gen = 0
        self._max_len = 0
        self._n_rows = 0
        self._geometry: Geometry | None = None
        self._geometry_key: tuple | None = None
        self._painted: dict[int, tuple] = {}  # visible row -> signature last painted
        self._painted_view: tuple | None = None
        self._frame_key: tuple | None = None
        self._frame_value: tuple = ()

    # ------------------------------------------------------------------ data
    def on_mount(self) -> None:
        """Follow theme changes; use glyphs when colour is off."""
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        if getattr(self.app, "no_color", False):
            self.glyphs = True

    def _theme_changed(self, _theme) -> None:
        self._palette = None
        self._cells.clear_filtered()
        self._theme_gen += 1
        self._strips.clear()
        self._full_refresh()
        self.post_message(self.ViewChanged())

    def watch_glyphs(self) -> None:
        """Redraw every row when glyphs are switched."""
        self._strips.clear()
        self._full_refresh()
        self.post_message(self.ViewChanged())

    def _full_refresh(self) -> None:
        self._painted = {}
        self._painted_view = None
        self.refresh()

    @property
    def palette(self) -> heat.Palette:
        """The colours of the scale's levels in the current theme."""
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
        st = self.state
        for row, sig in list(self._painted.items()):
            if st is not None and row < self._n_rows and self._row_signature(st, row) != sig:
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
        """The cell layout for the current rows, width and zoom."""
        key = (self._max_len, self.cell_area, self.zoom)
        if key != self._geometry_key or self._geometry is None:
            self._geometry = make_geometry(self._max_len, self.cell_area, self.zoom)
            self._geometry_key = key
        return self._geometry

    def _update_virtual_size(self) -> None:
        g = self.geometry
        self.virtual_size = Size(GUTTER + g.n_cells * g.chars, self._n_rows)

    def on_resize(self, _event: events.Resize) -> None:
        """Resize the scrollable area to the new width."""
        self._update_virtual_size()
        self.post_message(self.ViewChanged())

    @property
    def first_cell(self) -> int:
        """The first cell in view."""
        return int(self.scroll_offset.x) // self.geometry.chars

    def view(self) -> View:
        """Which cells are in view, for the ruler and the cursor line."""
        g = self.geometry
        return View(g, self.first_cell, self.cell_area // g.chars)

    def row_status(self, sample: int) -> str:
        """A sample's state: scored, skipped, decoding or pending."""
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
    def _row_signature(self, st: HelperState, sample: int) -> tuple:
        scored = st.book.samples.get(sample)
        if scored is not None:
            return ("s", id(scored))
        if sample in st.skipped:
            return ("k",)
        return ("d", st.decoded_len.get(sample, 0))

    def _row_levels(self, st: HelperState, sample: int, sig: tuple, g: Geometry) -> np.ndarray:
        key = (self.run_gen, st.key, sample, self._geometry_key, sig)
        cached = self._levels.get(key)
        if cached is not None:
            return cached
        scored = st.book.samples.get(sample)
        if scored is not None:
            # the worst level of each cell, zero meaning bit-equal logprobs (the scale's rule)
            starts = g.edges[g.edges < scored.k3.size]
            out = scale.bucket_levels(scored.k3, scored.lp_a, scored.lp_b, starts)
        else:
            n = g.n_cells_for(st.decoded_len.get(sample, 0))
            out = np.full(n, scale.PENDING, dtype=np.int8)
        self._levels[key] = out
        return out

    def _frame(self) -> tuple[int, Geometry, int, int, Style]:
        """Per-paint constants: width, geometry, first cell, top row, base style (computing
        them per line showed up in profiles)."""
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

    def _key_base(self, frame: tuple) -> tuple:
        """What every line of one paint shares in its cache key."""
        width, g, first, _top, _base = frame
        return (
            self.run_gen,
            self.state.key if self.state is not None else None,
            self._geometry_key,
            first,
            width,
            self._theme_gen,
            self.glyphs,
        )

    def _line_key(self, y: int, frame: tuple, base_key: tuple) -> tuple | None:
        """Cache key of visible line `y` (None for a blank line below the last row)."""
        row = frame[3] + y
        st = self.state
        if st is None or row >= self._n_rows:
            return None
        cursor_cell = frame[1].cell_of(self.cursor_pos) if row == self.cursor_row else -1
        focus = cursor_cell >= 0 and self.has_focus
        return (base_key, row, self._row_signature(st, row), cursor_cell, focus)

    def _row_strip(self, key: tuple | None, frame: tuple, flt: Filtering | None) -> Strip:
        """One line of the frame's width; `flt` = (line filters, background) gives it already
        filtered, None as Textual's render_line returns it."""
        if key is None:
            return Strip(self._cells.filter([Segment(" " * frame[0], frame[4])], flt), frame[0])
        _base_key, row, sig, cursor_cell, _focus = key
        self._painted[row] = sig
        if flt is not None:  # the caller caches the final strip
            return self._render_row(row, sig, frame, cursor_cell, flt)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._render_row(row, sig, frame, cursor_cell, None)
            self._strips[key] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        """One visible row of cells (before Textual's line filters)."""
        frame = self._frame()
        strip = self._row_strip(self._line_key(y, frame, self._key_base(frame)), frame, None)
        if self._painted_view is None:
            self._painted_view = self._view_key()
        return strip

    def render_lines(self, crop: Region) -> list[Strip]:
        """The visible rows, filtered; unchanged rows come from the cache of final strips.

        Textual's own path rebuilds and re-filters every line on each full refresh (a pan, a
        cursor move), one new Segment per cell; with no border, padding, tint or opacity it
        reduces to "content line, padded to the region, then the line filters", which is
        done here with every distinct Segment filtered once."""
        styles = self.styles
        frame = self._frame()
        region_width = self.region.width
        if (
            self.BLANK
            or frame[0] > region_width
            or any(styles.gutter)
            or styles.tint.a
            or self.opacity != 1.0
            or styles.text_opacity != 1.0
            or any(kind for kind, _colour in styles.outline)
            or (styles.has_rule("hatch") and styles.hatch != "none")
            or (self.auto_links and self.hover_style.link_id)
        ):
            return super().render_lines(crop)
        base_background, background = self.background_colors
        inner = Style(bgcolor=(base_background + background).rich_color)
        flt = (tuple(self.get_line_filters()), background)
        pad = self._cells.filter([Segment(" " * (region_width - frame[0]), inner)], flt)
        ctx = (flt, region_width, inner)
        base_key = self._key_base(frame)
        final_cache = self._final
        strips = []
        for y in crop.line_range:
            key = self._line_key(y, frame, base_key)
            final = final_cache.get((key, ctx)) if key is not None else None
            if final is None:
                final = self._row_strip(key, frame, flt)
                if region_width > frame[0]:
                    final = Strip([*final, *pad], region_width)
                if key is not None:
                    final_cache[(key, ctx)] = final
            elif key is not None:
                self._painted[key[1]] = key[2]
            strips.append(final)
        if self._painted_view is None:
            self._painted_view = self._view_key()
        x1, x2 = crop.column_span
        if (x1, x2) != (0, region_width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _render_row(
        self, row: int, sig: tuple, frame: tuple, cursor_cell: int, flt: Filtering | None
    ) -> Strip:
        width, g, first, _top, base = frame
        st = self.state
        if st is None:  # a line key is made only with a helper shown: a blank line, as below rows
            return Strip(self._cells.filter([Segment(" " * width, base)], flt), width)
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
            line = list(Strip(segments).adjust_cell_length(width, base))
            return Strip(self._cells.filter(line, flt), width)
        segments = self._cells.filter(segments, flt)
        lv = self._row_levels(st, row, sig, g)
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
        segments.extend(
            self._cells.cells(
                vis,
                codes,
                marks,
                (g.chars, base, flt),
                glyphs=self.glyphs,
                theme_gen=self._theme_gen,
                palette=lambda: self.palette,
            )
        )
        used = GUTTER + n_vis * g.chars
        if used < width:
            segments.extend(self._cells.filter([Segment(" " * (width - used), base)], flt))
        return Strip(segments, width)

    def clear_cache(self, *, reductions: bool = True, filtered: bool = True) -> None:
        """Forget the cached strips, and also the row reductions and filtered segments
        unless told to keep them."""
        self._strips.clear()
        self._final.clear()
        if filtered:
            self._cells.clear_filtered()
        if reductions:
            self._levels.clear()

    # ------------------------------------------------------------------ navigation


def ruler(view: View, gutter: int = GUTTER) -> Text:
    """Token positions above the columns, at round numbers spaced for legibility."""
    return Text(ruler_line(view, gutter), no_wrap=True, overflow="crop", style="dim")
