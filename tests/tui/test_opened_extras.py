"""A sample opened in the drill-down after the run gets its top-k and token text on demand: one
bounded request to the (real, embedded reference) server, never while the run's gate runs."""

from __future__ import annotations

import dataclasses
import socket

import pytest

from kltui.engines.sglang import SGLangClient
from kltui.engines.sglang_request import NO_LOGPROBS, LogprobAsk
from kltui.run.config import RunConfig
from kltui.session.events import RunStarted
from kltui.session.recording import read_recording
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed, ReplayFeed
from kltui.tui.screens.drilldown import DrillDown, extras_figures
from kltui.untrusted import UNKNOWN_TOKEN_TEXT
from kltui.words.screen_drill import extras_note_line
from tests.tui.kit import drawn, flat, replayed, until

SIZE = (160, 45)


@pytest.fixture(scope="module")
def server_url(reference_servers):
    """The session's shared reference server with the default settings."""
    return reference_servers.url()


def finished(app: KltuiApp) -> bool:
    return app.store is not None and app.store.finished is not None and not app.status.running


def fetching(app: KltuiApp) -> bool:
    """Whether a fetch of an opened sample's top-k and text is started and not finished."""
    return any(w.group == "extras" and not w.is_finished for w in app.workers)


async def open_drill(pilot, app: KltuiApp, sample: int) -> DrillDown:
    app.open_sample(sample, 0)
    await until(pilot, lambda: isinstance(app.screen, DrillDown) and app.screen.is_mounted)
    drill: DrillDown = app.screen
    await until(pilot, lambda: drill.table.row_count == 16)
    return drill


def small_run(server_url: str) -> RunConfig:
    """A short match-only run with --extras 0: nothing is fetched after the gate, so every
    sample opens without top-k or text."""
    return RunConfig(
        servers=[server_url],
        samples=3,
        max_new_tokens=16,
        max_prompt_tokens=64,
        helpers=["match"],
        extras=0,
    )


async def test_opened_sample_fetches_top_k_and_text_once_the_run_has_finished(
    server_url, monkeypatch
):
    # --extras 0: nothing is fetched after the gate, so every sample opens without text
    cfg = small_run(server_url)
    calls: list[LogprobAsk] = []
    real = SGLangClient.generate

    async def counted(self, batch, sp, ask=NO_LOGPROBS):
        calls.append(ask)
        return await real(self, batch, sp, ask)

    monkeypatch.setattr(SGLangClient, "generate", counted)
    app = KltuiApp(LiveFeed(cfg, None))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: finished(app), timeout=60)
        key = f"match@{server_url}"
        app.select_helper(key)
        st = app.store.helpers[key]
        assert st.extras == {} and not app.store.token_text
        gate_calls = len(calls)

        # while a run is going (its gate), opening a sample asks nothing and says so
        app.status.running = True
        drill = await open_drill(pilot, app, 1)
        assert "once the run has finished" in drawn(drill.query_one("#drill-head"))
        await pilot.pause()  # every message handled: a fetch would have started by now
        assert not fetching(app)
        assert len(calls) == gate_calls and st.extras == {}
        await pilot.press("escape")
        app.status.running = False

        drill = await open_drill(pilot, app, 1)
        await until(pilot, lambda: bool(drill.extras), timeout=30)
        assert len(calls) == gate_calls + 1  # one request
        req = calls[-1]
        assert req.top_logprobs_num == cfg.top_k and req.return_text_in_logprobs is True
        (ev,) = st.extras[1]
        assert ev.reason == "opened" and (ev.start, len(ev.token_ids)) == (0, 16)
        await until(pilot, lambda: "text" in [str(c.label) for c in drill.table.columns.values()])
        labels = [str(c.label) for c in drill.table.columns.values()]
        text_col, top_col = labels.index("text"), labels.index("top-k (separate request)")
        texts = [str(drill.table.get_cell_at((i, text_col))) for i in range(16)]
        assert UNKNOWN_TOKEN_TEXT not in texts and all(texts), texts
        assert all(str(drill.table.get_cell_at((i, top_col))) for i in range(16))
        head = drawn(drill.query_one("#drill-head"))
        spans, same, total = extras_figures(st.extras[1], drill.scored.lp_a)
        assert spans == [(0, 15)] and flat(extras_note_line(spans, same, total)) in flat(head)
        await pilot.press("escape")

        # opened again: already fetched, no second request
        await open_drill(pilot, app, 1)
        await pilot.pause()
        assert not fetching(app)
        assert len(calls) == gate_calls + 1
        await pilot.press("escape", "q")


async def test_replay_asks_the_recorded_server_on_x_and_says_when_it_cannot(server_url, tmp_path):
    record = tmp_path / "run.kltui.jsonl"
    cfg = small_run(server_url)
    live = KltuiApp(LiveFeed(cfg, str(record)))
    async with live.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: finished(live), timeout=60)
        await pilot.press("q")
    recording = read_recording(str(record))

    app = KltuiApp(ReplayFeed(recording, speed=None, instant=True))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        key = f"match@{server_url}"
        app.select_helper(key)
        drill = await open_drill(pilot, app, 2)
        # opening asks nothing: a replay says how to ask
        assert "x asks the recorded server" in drill.fetch_note
        await pilot.press("x")
        await until(pilot, lambda: bool(drill.extras), timeout=30)
        (ev,) = app.store.helpers[key].extras[2]
        assert ev.reason == "opened" and (ev.start, len(ev.token_ids)) == (0, 16)
        await until(pilot, lambda: "text" in [str(c.label) for c in drill.table.columns.values()])
        text_col = [str(c.label) for c in drill.table.columns.values()].index("text")
        texts = [str(drill.table.get_cell_at((i, text_col))) for i in range(16)]
        assert UNKNOWN_TOKEN_TEXT not in texts and all(texts), texts
        # the same logprobs as the recorded gate's, bit for bit (a deterministic CPU server)
        assert "bit for bit at 16/16" in drawn(drill.query_one("#drill-head"))

    # the same recording once its server is gone: x says so, nothing is fetched
    gone = f"http://127.0.0.1:{free_port()}"
    moved = [
        dataclasses.replace(
            e,
            servers=[{**s, "url": gone} for s in e.servers],
        )
        if isinstance(e, RunStarted)
        else dataclasses.replace(e, server=gone)
        if hasattr(e, "server") and getattr(e, "server", None) == server_url
        else e
        for e in recording.events
    ]
    app = KltuiApp(
        ReplayFeed(dataclasses.replace(recording, events=moved), speed=None, instant=True)
    )
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.select_helper(f"match@{gone}")
        drill = await open_drill(pilot, app, 2)
        await pilot.press("x")
        await until(pilot, lambda: "not fetched" in drill.fetch_note, timeout=30)
        assert "does not answer" in drill.fetch_note and not drill.extras
        assert "does not answer" in drawn(drill.query_one("#drill-head"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
