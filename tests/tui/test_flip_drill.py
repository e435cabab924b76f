"""The drill-down shows both engines' top-1/top-2 margins at every top-1 flip (issue 30), and
says which flips are near a tie and which cross the 0.7-nat line."""

from __future__ import annotations

import dataclasses
import math

from kltui.session.events import SampleScored
from kltui.tui.screens.drilldown import DrillDown
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed, until

SIZE = (180, 45)


def with_flips(events, sample: int):
    """Sample `sample`'s top-k on side B: a near tie swapped at 3, a sure choice overturned at 7."""
    out = []
    for ev in events:
        if isinstance(ev, SampleScored) and ev.sample == sample:
            top_a = [[(101, math.log(0.5)), (102, math.log(0.3))] for _ in ev.token_ids]
            top_b = [list(r) for r in top_a]
            top_a[3] = [(101, math.log(0.41)), (102, math.log(0.40))]
            top_b[3] = [(102, math.log(0.405)), (101, math.log(0.40))]
            top_a[7] = [(101, math.log(0.9)), (102, math.log(0.05))]
            top_b[7] = [(102, math.log(0.5)), (101, math.log(0.45))]
            ev = dataclasses.replace(ev, top_a=top_a, top_b=top_b)
        out.append(ev)
    return out


async def test_flip_margins_in_the_drill_down():
    events = with_flips(synth.session(n=3, length=16, helpers=("match",), top_k=True), 1)
    app = replay_app(events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.call_later(app.open_sample, 1, 7)
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        head = drawn(app.screen.query_one("#drill-head"))
        assert "top-1 flips 2" in head and "inside 0.7 nats 1" in head and "across 1" in head
        table = app.screen.table
        col = [c.label.plain for c in table.columns.values()].index("flip margin A / B")
        assert str(table.get_cell_at((3, col))) == "0.0247 / 0.0124"
        assert str(table.get_cell_at((7, col))) == "2.89 / 0.105"
        assert str(table.get_cell_at((0, col))) == ""
        await pilot.press("escape", "q")


async def test_no_flip_column_when_the_top_1_always_agrees():
    app = replay_app(synth.session(n=2, length=8, helpers=("match",), top_k=True))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.call_later(app.open_sample, 0, 0)
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        labels = [c.label.plain for c in app.screen.table.columns.values()]
        assert "flip margin A / B" not in labels
        assert "top-1 flips" not in drawn(app.screen.query_one("#drill-head"))
        await pilot.press("escape", "q")
