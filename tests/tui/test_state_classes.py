"""Whole-widget states are CSS classes, and app.tcss colours the parts they select from the
theme: the verdict badge, a helper row's result and the condition badge follow the state and
the theme."""

from __future__ import annotations

from textual.color import Color
from textual.geometry import Region

from kltui.session.events import RunFinished
from kltui.tui.widgets.diagnosis import DiagnosisBar
from kltui.tui.widgets.header import TitleBar
from kltui.tui.widgets.progress import HelperProgress
from tests.tui import synth
from tests.tui.kit import replay_app, replayed, until

SIZE = (140, 45)


def segment(widget, text: str):
    """The style of the first drawn segment that starts with `text` (cells pad it)."""
    size = widget.outer_size
    for line in widget.render_lines(Region(0, 0, size.width, size.height)):
        for seg in line:
            if seg.text.startswith(text):
                return seg.style
    raise AssertionError(f"{text!r} is not drawn")


def hex_of(rich_colour) -> str:
    return Color.from_rich_color(rich_colour).hex


async def test_verdict_badge_is_a_state_class_coloured_by_the_theme():
    # 12 samples: enough for a cache-hit verdict (at least 11 common samples)
    events = synth.session(n=12, length=16, fault=True, finish=False)
    app = replay_app(events + [RunFinished({"helpers": 3}, "fail")], theme="kltui-dark")
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        bar = app.query_one(TitleBar)
        assert bar.has_class("-replay", "-fail")
        assert not bar.has_class("-pass", "-running", "-live", "-read-only")
        vars_ = app.theme_variables
        assert hex_of(segment(bar, " FAIL ").bgcolor) == Color.parse(vars_["error"]).hex
        assert hex_of(segment(bar, " ▶ REPLAY ").bgcolor) == Color.parse(vars_["warning"]).hex
        progress = app.query_one(HelperProgress)
        fail = segment(progress, "✗ FAIL")
        assert fail.bold and hex_of(fail.color) == Color.parse(vars_["kl-bad"]).hex
        assert hex_of(segment(progress, "✓ PASS").color) == Color.parse(vars_["kl-ok"]).hex
        diagnosis = app.query_one(DiagnosisBar)
        cond = next(s for s in ("COND 1+2", "COND 2") if s in str(diagnosis.render()))
        badge = segment(diagnosis, f" {cond} ")
        assert badge.reverse and hex_of(badge.color) == Color.parse(vars_["kl-bad"]).hex
        # only the badge: the label after it is drawn plainly, not in the badge's reverse colour
        label = segment(diagnosis, " condition")
        assert not label.reverse and label.color != badge.color

        # another theme: the same state classes, that theme's colours
        app.theme = "kltui-light"
        await until(pilot, lambda: app.theme_variables["error"] != vars_["error"])
        light = app.theme_variables
        light_error = Color.parse(light["error"]).hex
        await until(pilot, lambda: hex_of(segment(bar, " FAIL ").bgcolor) == light_error)
        assert hex_of(segment(progress, "✗ FAIL").color) == Color.parse(light["kl-bad"]).hex


async def test_a_passing_run_switches_the_class_and_the_colour():
    app = replay_app(synth.session(n=3, length=16), read_only=True, theme="kltui-dark")
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        bar = app.query_one(TitleBar)
        assert bar.has_class("-pass", "-read-only") and not bar.has_class("-fail")
        success = Color.parse(app.theme_variables["success"]).hex
        assert hex_of(segment(bar, " PASS ").bgcolor) == success
        assert segment(bar, "  read-only").bold
