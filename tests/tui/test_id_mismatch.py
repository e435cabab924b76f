"""Tokens whose id the server reported differently are marked in the heatmap, the legend and
the drill-down, and still scored."""

from __future__ import annotations

import dataclasses

from kltui.session.events import SampleScored
from kltui.tui import heat
from kltui.tui.screens.drilldown import DrillDown
from kltui.tui.widgets.heatmap import Heatmap
from kltui.words.screen_drill import id_mismatch_line
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed, until

SIZE = (140, 45)


def with_mismatch(events, sample: int, position: int):
    out = []
    for ev in events:
        if isinstance(ev, SampleScored) and ev.sample == sample:
            ev = dataclasses.replace(ev, id_mismatch=[[position, 0]])
        out.append(ev)
    return out


async def test_mismatched_id_is_marked_and_explained():
    events = with_mismatch(synth.session(n=3, length=16, helpers=("match",)), 1, 4)
    app = replay_app(events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        st = app.selected_state()
        assert st.book.samples[1].id_mismatch == [[4, 0]]
        summary = st.book.summary(n_samples=3, n_skipped=0, threshold=1.0)
        assert summary["id_mismatch_tokens"] == 1
        sent = int(st.book.samples[1].token_ids[4])
        assert summary["id_mismatches"] == [
            {"sample": 1, "position": 4, "sent": sent, "reported": 0}
        ]
        rows = drawn(app.query_one(Heatmap)).splitlines()
        assert heat.MARK_ID in rows[1] and not any(heat.MARK_ID in r for r in rows[2:])
        assert "≠ other id reported" in drawn(app.query_one("#heat-legend"))
        app.call_later(app.open_sample, 1, 4)
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        head = " ".join(drawn(app.screen.query_one("#drill-head")).split())
        assert f"{heat.MARK_ID} {id_mismatch_line(1)}" in head, head
        table = app.screen.table
        col = [c.label.plain for c in table.columns.values()].index("token id")
        cell = str(table.get_cell_at((4, col)))
        assert cell == f"{sent} {heat.MARK_ID} 0"
        await pilot.press("escape", "q")
