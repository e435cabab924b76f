"""The TUI against a hostile server: every fault is shown, the app keeps running, nothing that
was measured is lost, and quitting gives the documented exit code."""

from __future__ import annotations

import pytest

from kltui.run.config import RunConfig
from kltui.session.recording import read_recording
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed
from tests.tui.kit import drawn, until

# in-process runs retry without the real backoff (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("fast_backoff")

SIZE = (140, 45)


def small(url: str, **kw) -> RunConfig:
    return RunConfig(
        servers=[url], samples=4, max_new_tokens=8, max_prompt_tokens=32, request_timeout=3.0, **kw
    )


def done(app: KltuiApp) -> bool:
    return app.store is not None and app.store.finished is not None and not app.status.running


@pytest.mark.parametrize(
    "fault,phase,helper_status",
    [
        ("reset-mid-stream", "decode", "error"),
        ("http-error", "prefill", "error"),
        ("malformed-sse", "decode", "error"),
        ("token-mismatch", "prefill", "error"),
        ("restart", "prefill", "invalid"),
        ("logprob-nan", "decode", "invalid"),  # one side only: a protocol finding
    ],
)
async def test_fault_is_shown_and_kept(hostile, tmp_path, fault, phase, helper_status):
    srv = hostile(fault=fault, phase=phase)
    record = tmp_path / "run.kltui.jsonl"
    app = KltuiApp(LiveFeed(small(srv.url, helpers=["match"]), str(record)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: done(app), timeout=60)
        app.refresh_views(force=True)
        await pilot.pause()
        st = next(iter(app.store.helpers.values()))
        assert st.summary.status == helper_status
        assert app.store.problems, "the fault must be reported"
        await pilot.press("e")  # the problems screen lists it, as plain text
        await pilot.pause()
        table = drawn(app.screen.query_one("#problems-table"))
        assert any(p.message[:40] in table for p in app.store.problems), table
        await pilot.press("escape", "q")
    expected = 1 if helper_status == "fail" else 3
    assert app.return_value == expected
    rec = read_recording(str(record))
    kinds = [type(e).__name__ for e in rec.events]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    assert "Problem" in kinds and "HelperFinished" in kinds
