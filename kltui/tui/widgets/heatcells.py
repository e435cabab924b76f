"""The Segments a heatmap row is made of, cached for `widgets/heatmap.py`: each distinct Segment
goes through the app's line filters once, and a run of n cells of one level is made once per
theme, glyph mode and style (cells repeat across rows, so a new row is mostly dictionary
lookups instead of per-segment filtering).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter

from kltui.metrics import scale
from kltui.tui import heat

# the app's line filters and the background they blend with: what a final strip went through
Filtering = tuple[tuple[LineFilter, ...], Color]


class CellSegments:
    """Filtered Segments and cell runs, remembered between rows and redraws."""

    def __init__(self) -> None:
        # one filtered Segment per (filters, background, raw Segment)
        self._filtered: dict[Filtering, dict[Segment, list[Segment]]] = {}
        self._styles_key: tuple | None = None
        self._cell_styles: list[Style] = []
        self._segments: dict[Filtering | None, list[dict[int, Segment]]] = {}

    def clear_filtered(self) -> None:
        """Forget the filtered Segments (another theme's filters)."""
        self._filtered.clear()

    def filter(self, segments: list[Segment], flt: Filtering | None) -> list[Segment]:
        """`segments` through the line filters of `flt`, each distinct Segment filtered once
        (the memo is what makes a new row mostly dictionary lookups)."""
        if flt is None or not flt[0]:
            return segments
        memo = self._filtered.get(flt)
        if memo is None or len(memo) > 8192:
            if len(self._filtered) > 4:  # old themes' filters
                self._filtered.clear()
            memo = self._filtered[flt] = {}
        filters, background = flt
        out: list[Segment] = []
        for seg in segments:
            done = memo.get(seg)
            if done is None:
                done = [seg]
                for f in filters:
                    done = f.apply(done, background)
                memo[seg] = done
            out.extend(done)
        return out

    def _run_cache(
        self, key: tuple, palette: Callable[[], heat.Palette], flt: Filtering | None
    ) -> list[dict[int, Segment]]:
        """Per level, the Segment of a run of n characters (filtered by `flt`), reset when the
        theme, glyph mode or widget style changes (`key`: those three)."""
        _, glyphs, base = key
        if key != self._styles_key:
            pal = palette()
            levels = pal.glyph if glyphs else pal.bg
            self._cell_styles = [base + st for st in levels]
            self._segments = {}
            self._styles_key = key
        cache = self._segments.get(flt)
        if cache is None:
            cache = self._segments[flt] = [{} for _ in self._cell_styles]
        return cache

    def cells(
        self,
        vis: np.ndarray,
        codes: np.ndarray,
        marks: dict[int, str],
        how: tuple[int, Style, Filtering | None],
        *,
        glyphs: bool,
        theme_gen: int,
        palette: Callable[[], heat.Palette],
    ) -> list[Segment]:
        """The visible cells of a row as Segments, one per run of equal codes: `vis` the
        levels, `codes` the levels with each mark a code of its own, `marks` cell -> mark;
        `how`: characters a cell, the base style, the line filters."""
        chars, base, flt = how
        if vis.size == 0:
            return []
        change = np.empty(codes.size, dtype=bool)
        change[0] = True
        np.not_equal(codes[1:], codes[:-1], out=change[1:])
        starts = np.flatnonzero(change)
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[-1] = codes.size
        lengths = ((ends - starts) * chars).tolist()
        run_levels = vis[starts].tolist()
        cache = self._run_cache((theme_gen, glyphs, base), palette, flt)
        styles = self._cell_styles
        fill = heat.GLYPHS if glyphs else [" "] * scale.N_LEVELS
        # Runs repeat (same level, same length) across rows: reuse their Segments.
        out: list[Segment] = []
        append = out.append
        for n, level in zip(lengths, run_levels, strict=True):
            seg = cache[level].get(n)
            if seg is None:
                raw = Segment(fill[level] * n, styles[level])
                seg = cache[level][n] = self.filter([raw], flt)[0]
            append(seg)
        if marks:
            pal = palette()
            for c, mark in marks.items():
                i = int(np.searchsorted(starts, c))
                mstyle = pal.cursor if mark == heat.MARK_CURSOR else pal.marker
                raw = Segment(mark + " " * (chars - 1), styles[run_levels[i]] + mstyle)
                out[i] = self.filter([raw], flt)[0]
        return out
