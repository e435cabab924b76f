"""Quiet vs stressed side by side (issue 32): the screen a --stress session opens when its
stressed run ends, from a committed pair of recordings of a real reference-server session
(`kltui check --stress light` against `--deterministic --fault stale-prompt-logprobs`)."""

from __future__ import annotations

from pathlib import Path

from kltui.readings.stress import read
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import ReplayFeed
from kltui.tui.screens.stress import StressScreen
from tests.tui.kit import drawn, replayed

DATA = Path(__file__).parent / "data"
QUIET, LOUD = DATA / "stress.kltui.jsonl", DATA / "stress-2.kltui.jsonl"


def reading():
    stores = []
    for path in (QUIET, LOUD):
        fold(read_recording(str(path)), stores.append)
    return read(stores[0], stores[1])


def app() -> KltuiApp:
    return KltuiApp(ReplayFeed(read_recording(str(LOUD)), speed=None, instant=True))


async def _open(pilot) -> None:
    await replayed(pilot, pilot.app)
    pilot.app.push_screen(StressScreen(reading(), pilot.app.theme_variables))
    await pilot.pause()


def test_the_pair_reads_as_a_state_bug_under_load():
    r = reading()
    assert r.verdict == "state bug under load"
    bug = next(h for h in r.helpers if h.state_bug)
    assert bug.first is not None and bug.first.side == "prefill" and bug.during is not None
    assert all(s == "pass" for h in r.helpers for s in h.statuses[:1])  # quiet: every gate passes


async def test_screen_shows_both_runs_and_the_traffic():
    a = app()
    async with a.run_test(size=(140, 45)) as pilot:
        await _open(pilot)
        text = drawn(a.screen.query_one("#stress-detail"))
    for word in ("quiet", "stressed", "state bug under load", "sample", "requests"):
        assert word in text
    assert "prefill" in text


def test_snapshot_quiet_vs_stressed(snap_compare):
    assert snap_compare(app(), terminal_size=(140, 45), run_before=_open)
