"""One colour scale, one zero (issue 20): the TUI heatmap and the HTML report take the level of a
token from `kltui.metrics.scale` (zero = bit-equal logprobs, not k3 == 0) and the colours from
the same ramp in the same direction (calm to alarm), the report's being the kltui-light theme's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from textual.app import App, ComposeResult
from textual.color import Color
from textual.geometry import Region

from kltui.metrics import scale
from kltui.metrics.k3 import k3
from kltui.outputs.reports.heatmap import PALETTE, heat_levels, heat_rows
from kltui.session.events import HelperStarted, SampleScored
from kltui.session.store import SessionStore
from kltui.tui import heat, themes
from kltui.tui.widgets.heatmap import Heatmap

ROOT = Path(__file__).resolve().parents[2]
ULP = 3  # the position whose logprobs differ by one ulp


def one_ulp_store() -> SessionStore:
    """One sample of 8 tokens, bit-equal logprobs except one ulp at position ULP."""
    lp_b = np.full(8, -2.0)
    lp_a = lp_b.copy()
    lp_a[ULP] = np.nextafter(-2.0, 0.0)
    assert k3(lp_a, lp_b)[ULP] == 0.0  # k3 cannot see it; the bits differ
    store = SessionStore()
    store.apply(HelperStarted("match", "http://t", 1, 2e-3, 1e-3, {"max_new_tokens": 8}))
    store.apply(SampleScored("match", "http://t", 0, np.arange(8), lp_a, lp_b, 0, 100))
    return store


class HeatApp(App):
    CSS = "Heatmap { width: 1fr; height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield Heatmap()


def cell_colours(hm: Heatmap) -> list[Color]:
    """Background colour of each drawn cell of row 0 (cells are 4 characters wide here)."""
    line = hm.render_lines(Region(0, 0, hm.outer_size.width, 1))[0]
    colours = []
    x = 0
    for seg in line:
        if 6 <= x < 6 + 8 * 4 and seg.style is not None and seg.style.bgcolor is not None:
            colours += [Color.from_rich_color(seg.style.bgcolor)] * (len(seg.text) // 4)
        x += len(seg.text)
    return colours


async def test_one_ulp_token_is_not_zero_in_the_tui_nor_in_the_report():
    store = one_ulp_store()
    st = next(iter(store.helpers.values()))
    report = heat_levels(st, heat_rows(st))[0].tolist()
    assert report[ULP] == scale.FIRST_BIN and report[0] == scale.ZERO
    app = HeatApp()
    async with app.run_test(size=(60, 6)) as pilot:
        hm = app.query_one(Heatmap)
        hm.show(st, 1)
        await pilot.pause()
        colours = cell_colours(hm)
        assert len(colours) == 8
        pal = hm.palette
        zero, lowest = pal.colours[scale.ZERO], pal.colours[scale.FIRST_BIN]
        assert colours[ULP] == lowest, (colours[ULP], lowest)
        assert all(c == zero for i, c in enumerate(colours) if i != ULP)
    # the same level everywhere a token is coloured
    scored = st.book.samples[0]
    tui = scale.token_levels(scored.k3, scored.lp_a, scored.lp_b)
    assert tui.tolist() == report


def light_theme_palette() -> heat.Palette:
    loaded = themes.load_themes([ROOT / "themes"])
    light = next(t for t in loaded.themes if t.name == "kltui-light")
    return heat.Palette.from_variables(light.variables, "#ffffff")


def test_the_report_colours_are_the_light_themes_for_every_level():
    pal = light_theme_palette()
    for level in range(scale.PENDING, scale.N_LEVELS):
        assert PALETTE[level] == pal.colours[level].rgb, scale.bin_label(level)
    variables = next(
        t for t in themes.load_themes([ROOT / "themes"]).themes if t.name == "kltui-light"
    ).variables
    assert {k: variables[k] for k in scale.LIGHT} == scale.LIGHT


def test_a_clean_pass_looks_calm_in_the_report_and_a_fault_alarming():
    def contrast_with_white(rgb) -> float:
        lum = Color(*rgb).brightness
        return 1.0 / max(lum, 1e-6)

    clean = PALETTE[scale.level_of(1e-12)]
    fault = PALETTE[scale.level_of(1e-2)]
    # pale and cool on the white page (before: viridis yellow), the fault warm and dark
    assert clean[2] > clean[0] and contrast_with_white(clean) < 1.2, clean
    assert fault[0] > fault[2] and contrast_with_white(fault) > 1.8, fault
    # the direction of every TUI theme: the lowest bin is the calmest (closest to the
    # theme's background), the top bin the furthest from it
    for name, background in (("kltui-dark", "#1e1e1e"), ("kltui-light", "#ffffff")):
        theme = next(t for t in themes.load_themes([ROOT / "themes"]).themes if t.name == name)
        pal = heat.Palette.from_variables(theme.variables, background)
        bg = Color.parse(background)
        low = abs(pal.colours[scale.FIRST_BIN].brightness - bg.brightness)
        high = abs(pal.colours[scale.NONFINITE - 1].brightness - bg.brightness)
        assert low < high, name


def test_bucket_levels_are_the_worst_token_level_of_each_bucket():
    rng = np.random.default_rng(3)
    n = 997
    lp_b = -rng.exponential(1.0, n)
    lp_a = lp_b.copy()
    kind = rng.integers(0, 6, n)
    lp_a[kind == 1] = np.nextafter(lp_b[kind == 1], 0.0)  # one ulp: k3 0 or tiny
    lp_a[kind == 2] += rng.normal(0, 1e-3, int((kind == 2).sum()))
    lp_a[kind == 3] = np.nan
    lp_a[kind == 4] = lp_b[kind == 4] = -np.inf  # bit-equal -inf: zero
    sparse = rng.random(n) < 0.9
    lp_a[sparse & (kind != 4)] = lp_b[sparse & (kind != 4)]  # mostly bit-equal rows
    values = k3(lp_a, lp_b)
    tokens = scale.token_levels(values, lp_a, lp_b)
    for width in (1, 2, 7, 64, 300, n):
        starts = np.arange(0, n, width)
        want = np.maximum.reduceat(tokens, starts)
        got = scale.bucket_levels(values, lp_a, lp_b, starts)
        assert got.tolist() == want.tolist(), width
