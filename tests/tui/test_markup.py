"""Strings from a server, a recording or a file are shown literally in every part of the TUI
that Textual would otherwise parse as markup: toasts, border titles, the command palette.

These tests turn notifications on (`run_test(notifications=True)`): the harness hides toasts by
default, which is how a `MarkupError` in `notify()` once went unnoticed."""

from __future__ import annotations

import dataclasses

import pytest
from textual.widgets._toast import Toast

from kltui.run.config import RunConfig
from kltui.session.events import HelperStarted, Problem
from kltui.tui.app import KltuiApp
from kltui.tui.commands import KltuiCommands
from kltui.tui.feeds import LiveFeed
from kltui.tui.widgets.counters import Counters
from kltui.tui.widgets.heatpanel import HeatmapPanel
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed, until

# in-process runs retry without the real backoff (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("fast_backoff")

SIZE = (160, 45)
# An unbalanced closing tag (MarkupError) and a clickable action (would quit the app).
BAD = "bad request: [/bold] end [@click=app.quit]x[/]"
STYLED = "[bold red]pwn[/] [@click=app.quit]x[/]"
HELPER = "m[/b]x"


def toasts(app: KltuiApp) -> str:
    return "\n".join(drawn(t) for t in app.screen.query(Toast))


def flat(text: str) -> str:
    """Toast text wraps; compare with the line breaks and borders' padding removed."""
    return " ".join(line.strip(" ▌") for line in text.splitlines())


async def test_server_error_text_in_a_toast_is_literal(hostile, tmp_path):
    srv = hostile(fault="http-error", phase="prefill", error_message=BAD)
    cfg = RunConfig(
        servers=[srv.url],
        samples=2,
        max_new_tokens=4,
        max_prompt_tokens=16,
        request_timeout=3.0,
        helpers=["match"],
    )
    app = KltuiApp(LiveFeed(cfg, str(tmp_path / "run.kltui.jsonl")))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: app.store is not None and bool(app.store.problems), 60)
        await until(pilot, lambda: "[@click=app.quit]" in flat(toasts(app)), 10)
        shown = flat(toasts(app))
        assert "bad request: [/bold] end [@click=app.quit]x[/]" in shown, shown
        app.notify(STYLED)
        await pilot.pause()
        assert "[bold red]pwn[/]" in flat(toasts(app))
        assert app.is_running, "a toast's text must never act as a link"
        await pilot.press("q")


async def test_replay_with_a_markup_helper_name(tmp_path):
    events = [_rename(ev) for ev in synth.session(n=3, length=16, helpers=("match",))]
    events.insert(1, Problem(f"{HELPER}@{synth.URL}", STYLED, fatal=False))
    app = replay_app(events)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await replayed(pilot, app)
        assert any(isinstance(e, HelperStarted) and e.helper == HELPER for e in events)
        assert f"k3 heatmap · {HELPER}" in drawn(app.query_one(HeatmapPanel))
        assert f"counters · {HELPER}" in drawn(app.query_one(Counters))
        app.notify(f"{HELPER}: {STYLED}")
        await pilot.pause()
        shown = flat(toasts(app))
        assert f"{HELPER}:" in shown and "[bold red]pwn[/]" in shown, shown
        provider = KltuiCommands(app.screen)
        key = f"Switch helper: {HELPER}@{synth.URL}"
        hits = [h async for h in provider.search("switch helper")]
        assert [h.prompt.plain for h in hits] == [key]
        found = [h async for h in provider.discover()]
        assert key in [h.prompt.plain for h in found]
        await pilot.press("enter")  # the drill-down titles carry the helper name too
        await pilot.pause()
        assert f"· {HELPER}" in drawn(app.screen.query_one("#drill-head"))
        await pilot.press("escape", "q")
    assert app.return_value == 0


def _rename(ev):
    if dataclasses.is_dataclass(ev) and getattr(ev, "helper", None) == "match":
        return dataclasses.replace(ev, helper=HELPER)
    return ev
