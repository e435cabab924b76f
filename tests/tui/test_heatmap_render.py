"""The heatmap's own render_lines (strips cached after the line filters, each distinct Segment
filtered once) draws exactly what Textual's styles-cache path draws from its render_line, in
every state a user can reach: fit and zoomed, panned with scrollbars, cursor and focus, marks,
skipped rows, glyph mode, another theme, a partial crop."""

from __future__ import annotations

from textual.geometry import Region
from textual.scroll_view import ScrollView

from kltui.tui.widgets.heatmap import Heatmap
from tests.tui import synth
from tests.tui.kit import replay_app, replayed

SIZE = (120, 40)


def both(hm: Heatmap, crop: Region | None = None) -> tuple[list, list]:
    """(what Heatmap.render_lines draws, what Textual's own path draws), as segment lists."""
    size = hm.outer_size
    crop = crop or Region(0, 0, size.width, size.height)
    ours = [list(strip) for strip in hm.render_lines(crop)]
    hm._styles_cache.clear()
    textual = [list(strip) for strip in ScrollView.render_lines(hm, crop)]
    return ours, textual


def assert_same(hm: Heatmap, crop: Region | None = None) -> None:
    ours, textual = both(hm, crop)
    assert len(ours) == len(textual)
    for y, (a, b) in enumerate(zip(ours, textual, strict=True)):
        assert a == b, f"line {y} differs:\nours    {a[:6]}\ntextual {b[:6]}"


async def test_fast_render_matches_textual_pipeline_in_every_state():
    events = synth.session(n=60, length=400, fault=True)
    app = replay_app(events, theme="kltui-dark")
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        hm = app.query_one(Heatmap)
        # one row that is not drawn as cells: the skipped row's text path
        assert hm.state is not None and hm._n_rows > hm.size.height  # a vertical scrollbar
        assert_same(hm)
        hm.focus()
        await pilot.press("down", "down", "right", "right", "right")
        await pilot.pause()
        assert_same(hm)
        await pilot.press("plus", "plus", "plus")  # zoomed: a horizontal scrollbar too
        await pilot.pause()
        assert hm.zoom is not None
        assert_same(hm)
        await pilot.press("shift+right", "pagedown")
        await pilot.pause()
        assert_same(hm)
        assert_same(hm, Region(3, 2, 40, 5))  # a partial crop
        await pilot.press("g")  # glyph mode
        await pilot.pause()
        assert_same(hm)
        app.theme = "kltui-light"
        await pilot.pause()
        assert_same(hm)
        hm.blur()
        await pilot.pause()
        assert_same(hm)


async def test_skipped_rows_match_textual_pipeline():
    events = synth.session(n=12, length=48, helpers=("prefill_cache_hit",))
    app = replay_app(events, theme="kltui-cb")
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        hm = app.query_one(Heatmap)
        assert hm.state is not None and hm.state.skipped, "the synthetic run skips a sample"
        assert_same(hm)
