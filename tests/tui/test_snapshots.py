"""Snapshots at a fixed terminal size, from committed recordings of reference-server runs.

Review changes with `pytest tests/tui --snapshot-update` only after looking at the HTML diff.
"""

from __future__ import annotations

from pathlib import Path

from kltui.session.recording import read_recording
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import ReplayFeed
from kltui.tui.widgets.heatmap import Heatmap
from tests.tui.kit import replayed

DATA = Path(__file__).parent / "data"
SIZE = (140, 45)
# decode_cache_hit against `--deterministic --fault window-evict`: condition 2
FAULT = DATA / "window-evict.kltui.jsonl"
# every helper against the default (batch-variant) kernels: condition 1
NOISE = DATA / "noise.kltui.jsonl"


def replay(path: Path, **kw) -> KltuiApp:
    return KltuiApp(ReplayFeed(read_recording(str(path)), speed=None, instant=True), **kw)


def steps(*keys: str, helper: str | None = None, after=None):
    async def run_before(pilot) -> None:
        app = pilot.app
        await replayed(pilot, app)
        if helper is not None:
            app.select_helper(next(k for k in app.helper_keys() if k.startswith(helper + "@")))
        await pilot.press(*keys)
        if after is not None:
            after(app)
        app.refresh_views()
        await pilot.pause()

    return run_before


def test_dashboard_state_bug(snap_compare):
    # no keys: a finished run opens on the helper that failed
    assert snap_compare(replay(FAULT), terminal_size=SIZE, run_before=steps())


def test_drilldown_first_divergence(snap_compare):
    run_before = steps("f", "enter", "n")
    assert snap_compare(replay(FAULT), terminal_size=SIZE, run_before=run_before)


def test_dashboard_light_theme(snap_compare):
    run_before = steps(helper="match")
    assert snap_compare(
        replay(NOISE, theme="kltui-light"), terminal_size=SIZE, run_before=run_before
    )


def test_colour_blind_theme_with_glyphs_zoomed(snap_compare):
    def cursor(app):
        app.query_one(Heatmap).move_to(3, 40)

    run_before = steps("g", "plus", after=cursor)
    assert snap_compare(replay(FAULT, theme="kltui-cb"), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare):
    assert snap_compare(replay(NOISE), terminal_size=SIZE, run_before=steps("question_mark"))


def test_dashboard_80x24(snap_compare):
    # the smallest usual terminal: the verdict, avg_kl_div and PASS/FAIL per helper and the
    # diagnosis' first line stay; counters and history give way (issue 21 item 2)
    assert snap_compare(replay(FAULT), terminal_size=(80, 24), run_before=steps())


def test_dashboard_120x40(snap_compare):
    assert snap_compare(replay(FAULT), terminal_size=(120, 40), run_before=steps())


def test_diagnosis_statistics_folded(snap_compare):
    # issue 59: the verdict and its plain evidence first, the statistics' lines behind `space`
    assert snap_compare(replay(NOISE), terminal_size=SIZE, run_before=steps("d"))


def test_diagnosis_statistics_shown(snap_compare):
    assert snap_compare(replay(NOISE), terminal_size=SIZE, run_before=steps("d", "space"))
