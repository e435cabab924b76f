"""The drill-down shows top-k and token text fetched after the gate, marked as a separate request."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kltui.session.events import ExtrasFetched, HelperFinished, RunStarted
from kltui.session.servers import NO_TOKENIZER
from kltui.tui.screens.drilldown import DrillDown
from kltui.words.screen_drill import FetchNote, extras_note_line, fetch_note
from tests.tui import synth
from tests.tui.kit import drawn, flat, replay_app, replayed, until

SIZE = (160, 45)


def with_extras(sample: int, start: int, n: int, hostile: str):
    events = synth.session(n=3, length=40, helpers=("match",), fault=True)
    scored = {e.sample: e for e in events if type(e).__name__ == "SampleScored"}[sample]
    ids = np.asarray(scored.token_ids[start : start + n])
    lp = np.asarray(scored.lp_a[start : start + n]).copy()
    lp[0] += 1e-3  # that request disagreed with the gate at one position
    top = [[[int(t), float(v)], [int(t) + 1, float(v) - 1.0]] for t, v in zip(ids, lp, strict=True)]
    extra = ExtrasFetched(
        "match",
        synth.URL,
        sample,
        start,
        ids,
        lp,
        top,
        texts=[hostile] + ["tok"] * (n - 1),
        alt_texts={str(int(ids[1]) + 1): "alt"},
        reason="worst",
    )
    at = max(i for i, e in enumerate(events) if isinstance(e, HelperFinished)) + 1
    return events[:at] + [extra] + events[at:], extra


async def open_drill(pilot, app, sample: int) -> DrillDown:
    """Open match's sample in the drill-down and wait until its 40 rows are drawn."""
    app.select_helper(f"match@{synth.URL}")
    app.open_sample(sample, 0)
    await until(pilot, lambda: isinstance(app.screen, DrillDown))
    drill: DrillDown = app.screen
    await until(pilot, lambda: drill.is_mounted and drill.table.row_count == 40)
    return drill


async def test_drill_down_shows_the_separate_requests_top_k_and_text():
    hostile = "[bold]x[/]"
    events, extra = with_extras(1, 4, 6, hostile)
    app = replay_app(events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        drill = await open_drill(pilot, app, 1)
        head = drawn(drill.query_one("#drill-head"))
        assert flat(extras_note_line([(4, 9)], 5, 6)) in flat(head)
        table = drill.table
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[-1] == "top-k (separate request)"
        last = len(labels) - 1
        assert str(table.get_cell_at((3, last))) == ""  # before the window: nothing fetched
        assert str(table.get_cell_at((4, last))).startswith(hostile)  # text shown literally
        assert "alt" in str(table.get_cell_at((5, last)))  # an alternative's text
        text_col = labels.index("text")
        assert str(table.get_cell_at((4, text_col))) == hostile


async def test_drill_down_of_a_sample_without_extras_says_so():
    events, _ = with_extras(1, 4, 6, "x")
    app = replay_app(events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        drill = await open_drill(pilot, app, 2)
        head = drawn(drill.query_one("#drill-head"))
        assert "top-k not recorded" in head
        # a replay asks no server, and says so (issue 21 item 4)
        assert flat(fetch_note(FetchNote.REPLAY)) in flat(head)


def without_tokenizer(events: list) -> list:
    """The same run, as from a server started with --skip-tokenizer-init."""
    return [
        dataclasses.replace(e, servers=[{**s, "skip_tokenizer_init": True} for s in e.servers])
        if isinstance(e, RunStarted)
        else e
        for e in events
    ]


@pytest.mark.parametrize(
    ("with_text", "says"),
    [
        (False, "token ids only (--tokenizer PATH gives token text)"),
        (True, "token text from the local --tokenizer"),
    ],
)
async def test_a_server_without_tokenizer_is_named_in_the_drill_down_and_header(with_text, says):
    events, extra = with_extras(1, 4, 6, "x")
    texts = extra.texts if with_text else None
    run = [dataclasses.replace(e, texts=texts) if e is extra else e for e in events]
    app = replay_app(without_tokenizer(run))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        assert app.store.run.servers[0]["skip_tokenizer_init"] is True
        # the header and the drill-down name the fact in its words (golden: tests/unit/words)
        assert NO_TOKENIZER in drawn(app.query_one("#servers"))
        drill = await open_drill(pilot, app, 1)
        head = drawn(drill.query_one("#drill-head"))
        assert NO_TOKENIZER in head and says in head


async def test_unknown_token_text_is_marked_not_blank():
    # issue 21 item 4: a token outside the extras request's windows has no known text; it used
    # to show an empty cell, which reads as an empty or whitespace token
    events, extra = with_extras(1, 4, 6, " ")  # position 4's text is a single space
    app = replay_app(events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        drill = await open_drill(pilot, app, 1)
        table = drill.table
        text_col = [str(c.label) for c in table.columns.values()].index("text")
        unknown = table.get_cell_at((3, text_col))  # before the window: never fetched
        space = table.get_cell_at((4, text_col))
        assert str(space) == "␣"
        assert str(unknown) == "(no text)" and "dim" in str(unknown.style)
        assert str(unknown) != str(space) and str(unknown).strip()
