"""Small things a new user trips over in the TUI (issue 33, item 7)."""

from __future__ import annotations

from textual.widgets._toast import Toast

from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed

SIZE = (140, 45)


def toasts(app) -> str:
    return "\n".join(drawn(t) for t in app.screen.query(Toast))


async def test_e_without_problems_says_so():
    app = replay_app(synth.session(n=3, length=16, helpers=("match",)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await replayed(pilot, app)
        assert not app.store.problems
        await pilot.press("e")
        await pilot.pause()
        assert "no problems" in toasts(app)
        assert len(app.screen_stack) == 1
        await pilot.press("q")
