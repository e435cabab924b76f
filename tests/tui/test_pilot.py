"""Pilot tests on replayed synthetic runs: keys in, state out."""

from __future__ import annotations

import numpy as np

from kltui.metrics import scale
from kltui.session.events import Problem, TokensDecoded
from kltui.tui.app import KltuiApp
from kltui.tui.bindings import all_binding_ids
from kltui.tui.commands import KltuiCommands
from kltui.tui.screens.drilldown import DrillDown
from kltui.tui.screens.help import HelpScreen
from kltui.tui.screens.problems import ProblemsScreen
from kltui.tui.widgets.header import ServersPanel
from kltui.tui.widgets.heatmap import Heatmap
from kltui.tui.widgets.heatpanel import HeatmapPanel
from kltui.tui.widgets.progress import HelperProgress
from kltui.tui.widgets.samples import SampleTable
from kltui.words.screen_heatmap import NoZoom, no_zoom, zoom_status
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed, until

SIZE = (140, 45)
HOSTILE = "[bold red]x[/]\x1b[31mRED"


async def test_replay_fills_every_panel_and_quits_with_the_verdict():
    app = replay_app(synth.session(n=6, length=40))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        store = app.store
        assert store.finished.verdict == "pass"
        assert len(store.helpers) == 3
        # nothing failed and nobody picked a helper: the view followed the run to its end
        assert app.selected == f"decode_cache_hit@{synth.URL}"
        hm = app.query_one(Heatmap)
        assert hm.state is store.helpers[app.selected]
        assert app.query_one(SampleTable).row_count == 6
        assert app.history[-1].verdict == "pass"
        await pilot.press("q")
    assert app.return_value == 0


async def test_helper_switching_follows_keys_and_keymap():
    app = replay_app(keymap={"app.next-helper": "n"})
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        keys = app.helper_keys()
        app.select_helper(keys[0])
        await pilot.press("n")
        assert app.selected == keys[1]
        assert app.query_one(Heatmap).state.helper == "prefill_cache_hit"
        await pilot.press("left_square_bracket")
        assert app.selected == keys[0]
        await pilot.press("left_square_bracket")
        assert app.selected == keys[2]
        # a click on a helper's progress line selects it (border and title take line 0)
        await pilot.click(HelperProgress, offset=(6, 2))
        assert app.selected == keys[1]


async def test_first_divergence_then_drill_down_and_tail_navigation():
    app = replay_app(synth.session(n=6, length=40, fault=True))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.select_helper(f"decode_cache_hit@{synth.URL}")
        await pilot.press("f")
        st = app.selected_state()
        fd = st.summary.first_divergence
        hm = app.query_one(Heatmap)
        assert (hm.cursor_row, hm.cursor_pos) == (fd["sample"], fd["position"])
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        drill: DrillDown = app.screen
        scored = st.book.samples[fd["sample"]]
        assert drill.sample == fd["sample"]
        assert drill.table.row_count == scored.k3.size
        assert drill.position == fd["position"]
        await pilot.press("w")
        assert drill.position == scored.metrics.argmax_k3
        tails = np.flatnonzero(scored.k3 > st.tail_threshold)
        await pilot.press("f")
        start = drill.position
        await pilot.press("n")
        expected = tails[tails > start]
        if expected.size:
            assert drill.position == int(expected[0])
            await pilot.press("p")
            earlier = tails[tails < int(expected[0])]
            assert drill.position == (int(earlier[-1]) if earlier.size else int(expected[0]))
        await pilot.press("escape")
        assert not isinstance(app.screen, DrillDown)


async def test_spike_is_visible_in_the_heatmap_at_every_zoom():
    events = synth.session(n=4, length=600, helpers=("decode_cache_hit",), fault=True)
    app = replay_app(events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        hm = app.query_one(Heatmap)
        hm.focus()
        st = app.selected_state()
        spike = st.book.samples[2].metrics.argmax_k3
        fit = hm.geometry
        assert fit.tokens_per_cell > 1
        for keys in ([], ["plus"], ["plus"], ["minus"], ["0"]):
            await pilot.press(*keys)
            g = hm.geometry
            cells = g.reduce(st.book.samples[2].k3)
            assert cells[g.cell_of(spike)] == st.book.samples[2].metrics.max_k3
        await pilot.press("plus", "plus")
        assert hm.zoom is not None and hm.geometry.tokens_per_cell <= fit.tokens_per_cell
        await pilot.press("0")
        assert hm.zoom is None


async def test_zoom_keys_on_a_heatmap_that_fits_say_why_nothing_changes():
    app = replay_app(synth.session(n=4, length=64, helpers=("match",)))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        hm = app.query_one(Heatmap)
        hm.focus()
        panel = app.query_one(HeatmapPanel)
        assert hm.geometry.tokens_per_cell == 1 and hm.zoom is None
        for key, what in (("plus", "zoom in"), ("minus", "zoom out"), ("0", "fit")):
            await pilot.press(key)
            await pilot.pause()
            assert hm.zoom is None
            note = no_zoom(what, NoZoom.ALL_FIT, 64, hm.cell_area)
            assert app.last_message == note
            assert note in drawn(panel), drawn(panel)
        await pilot.press("right")  # a move: the usual status is back
        await pilot.pause()
        assert zoom_status(1, None, 64) in drawn(panel)


async def test_enter_on_a_sample_row_opens_that_sample_and_sort_cycles():
    app = replay_app(synth.session(n=8, length=32, fault=True))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.select_helper(f"decode_cache_hit@{synth.URL}")
        await pilot.pause()
        table = app.query_one(SampleTable)
        table.focus()
        await pilot.press("o")  # sample -> mean k3 descending
        assert table.sort_by == "mean"
        st = app.selected_state()
        worst = max(st.book.samples.values(), key=lambda s: s.metrics.mean_k3).sample
        assert table.selected_sample() is not None
        table.move_cursor(row=0)
        assert table.selected_sample() == worst
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        assert app.screen.sample == worst


async def test_untrusted_text_is_shown_literally():
    server = synth.server(model_path=HOSTILE, served_model_name=None, kltui_fault=HOSTILE)
    problem = Problem(synth.URL, f"bad payload {HOSTILE}", fatal=False)
    events = synth.session(n=3, length=16, servers=[server], problems=[problem])
    token_text = {}
    for ev in events:
        if hasattr(ev, "token_ids") and ev.token_ids is not None and len(ev.token_ids):
            token_text[int(ev.token_ids[0])] = HOSTILE
    app = replay_app(events, token_text=token_text)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        shown = drawn(app.query_one(ServersPanel))
        assert "[bold red]x[/]\\x1b[31mRED" in shown
        assert "\x1b" not in shown
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, ProblemsScreen))
        text = drawn(app.screen.query_one("#problems-table"))
        assert "bad payload [bold red]x[/]\\x1b[31mRED" in text
        await pilot.press("escape")
        app.query_one(Heatmap).focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        table = app.screen.table
        cells = [str(table.get_cell_at((0, c))) for c in range(len(table.columns))]
        assert "[bold␣red]x[/]\\x1b[31mRED" in cells
        assert not any("\x1b" in c for c in cells)


async def test_screenshot_key_writes_a_named_svg(tmp_path):
    app = replay_app(screenshot_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("s")
        await until(pilot, lambda: app.screenshots)  # written once the toasts left the screen
        files = list(tmp_path.glob(f"kltui-{app.selected_state().helper}-*.svg"))
        assert len(files) == 1
        assert files[0].read_text().startswith("<svg")
        assert str(files[0]) in app.last_message


async def test_help_lists_every_binding_id_and_the_remapped_key():
    app = replay_app(keymap={"app.rerun": "ctrl+r"})
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        plain = drawn(app.screen.query_one("Static"))
        for binding_id in ("app.rerun", "heatmap.zoom-in", "drill.next-tail", "samples.sort"):
            assert binding_id in plain
        assert "^r" in plain  # the remapped key, as the footer writes it
        await pilot.press("escape")
        await pilot.press("ctrl+r")  # remapped re-run replays from the start
        await replayed(pilot, app)
        assert len(app.history) == 1


def test_every_binding_has_an_id():
    assert all_binding_ids()
    from textual.binding import Binding

    from kltui.tui.screens.drilldown import DrillDown as D

    for cls in (KltuiApp, Heatmap, SampleTable, D, HelpScreen, ProblemsScreen):
        for b in cls.BINDINGS:
            assert isinstance(b, Binding) and b.id, f"{cls.__name__}: {b}"


async def test_theme_change_recolours_the_heatmap():
    app = replay_app(synth.session(n=3, length=16))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        hm = app.query_one(Heatmap)
        before = hm.palette.colours
        gen = hm._theme_gen
        app.theme = "kltui-cb"
        await until(pilot, lambda: hm._theme_gen > gen)
        after = hm.palette.colours
        assert after != before
        assert after[scale.NONFINITE - 1].hex.lower() == "#fde725"  # viridis' top stop


async def test_no_color_uses_glyphs(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = replay_app(synth.session(n=3, length=16, helpers=("match",)))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        hm = app.query_one(Heatmap)
        assert hm.glyphs
        row = "".join(seg.text for seg in hm.render_line(1))
        assert set(row[6:]) & set("·-=*#")


async def test_command_palette_provider_offers_the_main_actions():
    app = replay_app(synth.session(n=3, length=16, fault=True))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        provider = KltuiCommands(app.screen)
        names = [c[0] for c in provider._commands()]
        for wanted in (
            "Jump to first divergence",
            "Save screenshot (SVG)",
            "Theme: kltui-cb",
            "Open sample 1",
            f"Switch helper: decode_cache_hit@{synth.URL}",
        ):
            assert wanted in names
        hits = [h async for h in provider.search("first divergence")]
        assert hits
        cb = dict((c[0], c[1]) for c in provider._commands())
        # The palette runs its callbacks inside the app; so does call_later.
        app.call_later(cb[f"Switch helper: decode_cache_hit@{synth.URL}"])
        await pilot.pause()
        assert app.selected == f"decode_cache_hit@{synth.URL}"
        app.call_later(cb["Open sample 1"])
        await until(pilot, lambda: isinstance(app.screen, DrillDown))


async def test_history_marks_bit_identical_reruns():
    one = synth.session(n=3, length=16, helpers=("match",))
    same = synth.session(n=3, length=16, helpers=("match",))
    # a third run of the same shape whose noise differs
    other = one[:1] + synth.helper_events("match", n=3, length=16, seed=7) + one[-1:]
    app = replay_app(one + same + other)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        assert [r.identical for r in app.history] == [None, True, False]


async def test_skipped_and_unscored_samples_explain_themselves():
    events = synth.session(n=4, length=16, helpers=("prefill_cache_hit",), finish=False)
    events = [e for e in events if type(e).__name__ != "SampleScored" or e.sample != 0]
    app = replay_app(events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.open_sample(3)
        assert "skipped" in app.last_message and "cache miss" in app.last_message
        app.open_sample(0)
        assert "not scored yet" in app.last_message
        assert app.store.finished is None


async def test_replay_quit_midway_exits_130():
    app = replay_app(synth.session(n=3, length=16), speed=0.01, instant=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.store is not None and app.store.run is not None)
        await pilot.press("q")
    assert app.return_value == 130


async def test_event_bursts_are_coalesced_into_few_redraws():
    app = replay_app(synth.session(n=2, length=8, helpers=("match",), finish=False))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        calls = []
        real = app.refresh_views
        app.refresh_views = lambda **kw: (calls.append(1), real(**kw))
        st = app.selected_state()
        for i in range(5000):
            ev = TokensDecoded("match", synth.URL, 1, 8 + i, np.array([5]), np.array([-0.1]))
            app.store.apply(ev)
            app.feed_event(ev)
        assert st.decoded_len[1] == 5008
        await until(pilot, lambda: calls and not app._dirty)  # the views caught up
        await pilot.pause()  # and every message the 5000 events left is handled
        assert len(calls) <= 10


async def test_no_redraw_once_the_app_is_exiting():
    # a redraw during teardown half-fails and stayed dirty, a repaint every tick (issue 21)
    app = replay_app()
    calls = []
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.refresh_views = lambda **kw: calls.append(kw)
        app._dirty = True
        app._tick()
        assert len(calls) == 1  # a dirty dashboard redraws
        app._dirty = True
        await app._on_exit_app()  # what textual-serve's "quit" and SIGTERM lead to
        app._tick()
        assert app.exiting and len(calls) == 1
