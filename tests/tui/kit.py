"""Shared helpers of the TUI tests: apps fed from synthetic events, and polling."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App

from kltui.tui import app as app_module
from kltui.tui import themes
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import ReplayFeed
from tests.tui import synth


def replay_app(events=None, *, speed=None, instant=True, **kw) -> KltuiApp:
    events = events if events is not None else synth.session()
    feed = ReplayFeed(synth.recording(events), speed=speed, instant=instant)
    return KltuiApp(feed, **kw)


async def until(pilot, cond: Callable[[], bool], timeout: float = 15.0) -> None:
    """Polls `cond` while the app runs; fails the test with a clear message on timeout."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await pilot.pause(0.02)


async def replayed(pilot, app: KltuiApp) -> None:
    """Waits for an instant replay to be fully applied and drawn."""
    await until(pilot, lambda: app.feed.finished)
    app.refresh_views()
    await pilot.pause()


def drawn(widget) -> str:
    """The text a widget draws right now, one line per row (what a user reads)."""
    from textual.geometry import Region

    size = widget.outer_size
    lines = widget.render_lines(Region(0, 0, size.width, size.height))
    return "\n".join("".join(seg.text for seg in line) for line in lines)


def flat(text: str) -> str:
    """`text` with its runs of whitespace (a wrapped line's breaks and padding) as one space."""
    return " ".join(text.split())


def drawn_at(node, selector: str) -> str:
    """What the widget `selector` under `node` draws now; "" while it is not mounted yet."""
    found = node.query(selector)
    return drawn(found.first()) if found else ""


class StyledApp(App):
    """A bare app with kltui's stylesheet and theme variables, to host one screen or widget as
    the dashboard shows it (app.tcss holds all the TUI's CSS)."""

    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(themes.VARIABLE_DEFAULTS)
