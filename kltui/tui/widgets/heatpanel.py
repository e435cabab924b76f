"""The heatmap with what makes it readable: a position ruler, a cursor line and a legend."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from kltui import fmt
from kltui.metrics import scale
from kltui.session.store import HelperState
from kltui.tui import heat
from kltui.tui.heatgeometry import GUTTER
from kltui.tui.widgets.heatmap import Heatmap, ruler
from kltui.untrusted import safe, token_repr
from kltui.words.hits import sample_count_text
from kltui.words.screen_heatmap import zoom_status


def legend(
    palette: heat.Palette,
    glyphs: bool,
    tau: float | None,
    id_marks: bool = False,
    width: int | None = None,
) -> Text:
    """The heatmap's legend: the scale's levels, from zero to the tail; within `width`, a
    compact form (one cell per level, short words) where the full one does not fit, and
    without the tail threshold where even that does not."""
    full = _legend(palette, glyphs, tau, id_marks, compact=False)
    if width is None or full.cell_len <= width:
        return full
    # then the tail threshold (also on the cursor line and in the counters), then words
    for t, short_id in ((tau, False), (None, False), (None, True)):
        compact = _legend(palette, glyphs, t, id_marks, compact=True, short_id=short_id)
        if compact.cell_len <= width:
            break
    return compact


def _legend(
    palette: heat.Palette,
    glyphs: bool,
    tau: float | None,
    id_marks: bool,
    *,
    compact: bool,
    short_id: bool = False,
) -> Text:
    def swatch(level: int, width: int = 1 if compact else 2) -> Text:
        if glyphs:
            return Text(heat.GLYPHS[level] * width, style=palette.glyph[level])
        return Text(" " * width, style=palette.bg[level])

    gap = "  " if compact else "   "
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("k3 ", style="bold")
    t.append_text(swatch(scale.ZERO))
    t.append(" 0 " if compact else " 0   ", style="dim")
    t.append(scale.bin_label(scale.FIRST_BIN) + " ", style="dim")
    for level in range(scale.FIRST_BIN, scale.NONFINITE):
        t.append_text(swatch(level))
    t.append(" " + scale.bin_label(scale.NONFINITE - 1), style="dim")
    if id_marks:  # first, so a narrow panel never cuts it
        t.append("  ")
        t.append(heat.MARK_ID, style=palette.marker)
        t.append(" other id" if short_id else " other id reported", style="dim")
    if tau is not None:
        t.append(f"  tail > {fmt.sci(tau, 0)}", style="dim")
    t.append(gap)
    t.append_text(swatch(scale.PENDING))
    t.append(" decoded" + gap, style="dim")
    t.append(heat.MARK_FIRST, style=palette.marker)
    t.append((" 1st div" if compact else " 1st divergence") + gap, style="dim")
    t.append_text(swatch(scale.NONFINITE, 1))
    t.append(" nan" if compact else " non-finite", style="dim")
    return t


def cursor_line(
    st: HelperState | None,
    sample: int,
    pos: int,
    geometry,
    token_text,
    tau: float | None = None,
    width: int | None = None,
) -> Text:
    """The line describing the token under the cursor; within `width`, the least telling
    parts go first, whole (the absolute position, the tail mark, the logprobs, the cell's
    span); the sample, position and k3 always stay."""
    t = Text(no_wrap=True, overflow="ellipsis")
    if st is None:
        t.append("no helper yet", style="dim")
        return t
    t.append(f"sample {sample}", style="bold")
    scored = st.book.samples.get(sample)
    if scored is None:
        if sample in st.skipped:
            t.append(" · skipped: ", style="dim")
            t.append_text(safe(_skip_reason(st, sample), limit=120))
        elif st.decoded_len.get(sample):
            t.append(f" · decoding · {st.decoded_len[sample]} tokens so far", style="dim")
        else:
            t.append(" · not started", style="dim")
        return t
    n = int(scored.k3.size)
    if n == 0:
        t.append(" · no generated tokens", style="dim")
        return t
    pos = min(pos, n - 1)
    # (priority, part): the highest priority number goes first when the line is too long
    parts: list[tuple[float, Text]] = []
    lo, hi = geometry.span(geometry.cell_of(pos)) if geometry.n_cells else (pos, pos + 1)
    if hi - lo > 1:
        parts.append((2, Text(f" · cell {lo}–{min(hi, n) - 1} (max of {hi - lo} shown)", "dim")))
    parts.append((0, Text(f" · pos {pos}", style="bold")))
    parts.append((5, Text(f" (abs {scored.prompt_len + pos})", style="dim")))
    tid = int(scored.token_ids[pos])
    token = Text(f" · token {tid}")
    if token_text and tid in token_text:
        token.append(" ")
        token.append_text(token_repr(token_text[tid]))
    parts.append((1, token))
    k3 = Text(" · k3 ")
    k3.append(fmt.sci(float(scored.k3[pos])), style="bold")
    parts.append((0, k3))
    a, b = float(scored.lp_a[pos]), float(scored.lp_b[pos])
    parts.append((3, Text(f" · lp_a {a:.6g} lp_b {b:.6g}")))
    short_lp: Text | None = Text(f" · lp {a:.6g} / {b:.6g}")  # the same numbers, 7 cells less
    if tau is not None and not float(scored.k3[pos]) <= tau:
        # the k3 beside it says as much; the legend and counters give the threshold
        parts.append((4, Text(f" · tail (k3 > {fmt.sci(tau, 0)})", style="bold")))
    while width is not None and t.cell_len + sum(p.cell_len for _, p in parts) > width:
        worst = max(prio for prio, _ in parts)
        if worst == 0:
            break
        if worst == 3 and short_lp is not None:  # first the short form of the logprobs
            parts = [
                (2.5 if prio == 3 else prio, short_lp if prio == 3 else p) for prio, p in parts
            ]
            short_lp = None
            continue
        parts = [(prio, p) for prio, p in parts if prio != worst]
    for _, part in parts:
        t.append_text(part)
    return t


class HeatmapPanel(Vertical):
    """The heatmap with its ruler, cursor line and legend."""

    def compose(self) -> ComposeResult:
        """The ruler, the heatmap, the cursor line and the legend."""
        yield Static(id="heat-ruler")
        yield Heatmap(id="heatmap")
        yield Static(id="heat-cursor")
        yield Static(id="heat-legend")

    @property
    def heatmap(self) -> Heatmap:
        """The heatmap inside."""
        return self.query_one(Heatmap)

    def on_resize(self) -> None:
        """The legend is laid out for a width: again for the new one."""
        self.update_chrome()

    def on_heatmap_view_changed(self, _msg: Heatmap.ViewChanged) -> None:
        """Redraw the ruler, cursor line and legend."""
        self.update_chrome()

    def update_chrome(self) -> None:
        """Redraw the ruler, cursor line and legend for the heatmap's view."""
        hm = self.heatmap
        st = hm.state
        view = hm.view()
        self.query_one("#heat-ruler", Static).update(ruler(view, GUTTER))
        token_text = getattr(self.app, "token_text", None)
        line = self.query_one("#heat-cursor", Static)
        line.update(
            cursor_line(
                st,
                hm.cursor_row,
                hm.cursor_pos,
                view.geometry,
                token_text,
                st.tail_threshold if st else None,
                line.content_size.width or max(20, self.size.width - 4),
            )
        )
        tau = st.tail_threshold if st else None
        id_marks = st is not None and any(s.id_mismatch for s in st.book.samples.values())
        box = self.query_one("#heat-legend", Static)
        width = box.content_size.width or max(20, self.size.width - 4)
        box.update(legend(hm.palette, hm.glyphs, tau, id_marks, width))
        g = view.geometry
        self.border_subtitle = hm.zoom_note or zoom_status(g.tokens_per_cell, hm.zoom, g.max_len)


def _skip_reason(st: HelperState, sample: int) -> str:
    """A checkpoint miss in words once the helper's summary holds its count (words/hits.py);
    kl_test_utils' misses keep the helper's own reason."""
    sm = st.summary
    if sm is not None and sm.hit_rule not in (None, "kl_test_utils"):
        return sample_count_text(sm.cache_counts, sample) or st.skipped[sample]
    return st.skipped[sample]
