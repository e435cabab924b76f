"""The multiturn branch tree (`t`): group > branch > turn with a k3 strip, the hit actual /
expected per turn, and Enter on a turn opening its drill-down."""

from __future__ import annotations

from dataclasses import replace

from kltui.helpers.multiturn_plan import MultiturnShape, where
from kltui.metrics.turn_hits import prefill_exact
from kltui.readings.multiturn import HitKind
from kltui.session.events import SampleScored
from kltui.tui.screens.branches import BranchTree, turn_label
from kltui.tui.screens.drilldown import DrillDown
from kltui.words.screen_toasts import Notice, notice
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed, until

SIZE = (160, 45)
SHAPE = MultiturnShape(groups=2, branches=2, turn_suffixes=(8,))  # 8 samples: 4 x 2 turns


def session() -> list:
    out = []
    for ev in synth.session(helpers=("match", "multiturn")):
        if isinstance(ev, SampleScored) and ev.helper == "multiturn":
            g, b, t = where(SHAPE, ev.sample)
            # turn 1 of g1b1 is held to a hit it did not get (cached 24, expected 30)
            want = 30 if (g, b, t) == (1, 1, 1) else ev.cached_tokens
            ev = replace(ev, group=g, branch=b, turn=t, hit_expected=prefill_exact(want).to_dict())
        out.append(ev)
    return out


async def test_the_tree_shows_every_turn_and_enter_opens_its_logprobs():
    app = replay_app(session())
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, BranchTree))
        await pilot.pause()
        text = drawn(app.screen.query_one("#branch-tree"))
        assert "group 0" in text and "branch 1 (g1b1)" in text
        assert text.count("turn 0") == 4 and text.count("turn 1") == 4
        reading = app.screen.reading
        hits = {(r.place.label, r.place.turn): (r.hit, r.place.cached_tokens) for r in reading.rows}
        assert hits.pop(("g1b1", 1)) == (HitKind.SHORT, 24)  # held to 30
        assert set(hits.values()) == {(HitKind.AS_ASSERTED, 24)}
        # each turn's leaf as the screen words it (HIT_WORDS: tests/unit/words)
        assert all(turn_label(app.screen.st, r, None).plain in text for r in reading.rows)
        assert "mean k3" in text
        await pilot.press("down", "down", "down", "enter")  # group 0 > branch 0 > turn 1
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        assert app.screen.sample == 1  # g0b0's turn 1


async def test_without_multiturn_the_key_says_so():
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("t")
        await pilot.pause()
        assert not isinstance(app.screen, BranchTree)
        assert app.last_message == notice(Notice.NO_MULTITURN)
