"""cross_engine's floors in the TUI (issue 47): the helper panel's line under cross_engine (each
engine's own noise beside the gap, and the reading), and the drill-down's own-noise band."""

from __future__ import annotations

import dataclasses

from kltui.metrics.floors import read_floors
from kltui.readings.floors import FloorKind, floors_of, read
from kltui.session.events import FloorScored, HelperFinished, SampleScored
from kltui.tui.screens.drilldown import DrillDown
from kltui.tui.widgets.floor_row import floor_cells
from kltui.words.screen_drill import band_note_line
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed, until

SIZE = (180, 45)


def with_floors(events):
    """cross_engine's sample 1 scored again: SGLang moved 1e-4 at position 2, vLLM not at all."""
    out = []
    for ev in events:
        if isinstance(ev, HelperFinished) and ev.helper == "cross_engine":
            reading = read_floors(3e-3, 2e-6, 0.0)
            summary = {**ev.summary, "floors": {
                "samples": [1], "of": 3, "composition": "one at a time", "first_batch": 3,
                "same_composition": False, "error": None,
                "sglang": {"avg_k3": 2e-6, "zero": False}, "vllm": {"avg_k3": 0.0, "zero": True},
                "gap": {"avg_k3": 3e-3}, "reading": reading.to_json()}}  # fmt: skip
            ev = dataclasses.replace(ev, summary=summary)
        out.append(ev)
        if isinstance(ev, SampleScored) and ev.helper == "cross_engine" and ev.sample == 1:
            lp_a = ev.lp_a.copy()
            lp_a[2] += 1e-4
            out.append(FloorScored("cross_engine", ev.server, 1, lp_a, ev.lp_b.copy()))
    return out


async def test_the_helper_panel_shows_the_floors_under_cross_engine():
    app = replay_app(with_floors(synth.session(n=3, length=8, helpers=("cross_engine",))))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        text = drawn(app.query_one("HelperProgress"))
        line = next(ln for ln in text.splitlines() if "└ floors" in ln)
        (st,) = app.store.helpers.values()
        floors = read(floors_of(st.summary.figures))
        assert floors.reading.kind == FloorKind.ABOVE and floors.reading.ratio == 1500
        assert (floors.engines["sglang"].avg_k3, floors.engines["vllm"].zero) == (2e-6, True)
        # the row as the words say it (golden: tests/unit/words/test_floors_words.py)
        assert all(cell.plain in line for cell in floor_cells(st.summary))
        await pilot.press("q")


async def test_the_drill_down_shows_each_positions_own_noise_band():
    app = replay_app(with_floors(synth.session(n=3, length=8, helpers=("cross_engine",))))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.call_later(app.open_sample, 1, 2)
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        head = drawn(app.screen.query_one("#drill-head"))
        # SGLang moved 1e-4 at position 2, vLLM not at all; the engines differ at 6 of 8
        # positions, all but position 2 beyond both own moves
        assert band_note_line(1e-4, 0.0, 5, 8) in head, head
        table = app.screen.table
        col = [c.label.plain for c in table.columns.values()].index("own noise A / B")
        assert str(table.get_cell_at((2, col))) == "1.0e-04 / 0"
        assert str(table.get_cell_at((0, col))) == "0 / 0"
        await pilot.press("escape")
        # a sample that was not scored again has no band
        app.call_later(app.open_sample, 0, 0)
        await until(pilot, lambda: isinstance(app.screen, DrillDown) and app.screen.sample == 0)
        labels = [c.label.plain for c in app.screen.table.columns.values()]
        assert "own noise A / B" not in labels
        await pilot.press("escape", "q")
