"""The helpers panel before a helper's decode streams (issue 59: over 2 minutes of a default
TUI run on the reference server showed no estimate): requests answered, the phase's time and an
ETA from an earlier helper's decode of the same size, else "estimating" and what it waits for."""

from __future__ import annotations

import dataclasses

from kltui.session.events import PhaseChanged, Problem
from kltui.session.recording import Recording
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import ReplayFeed
from kltui.words.screen_progress import Waiting, before_decode_line
from tests.tui import synth
from tests.tui.kit import drawn, replayed

EPOCH = 1_700_000_100.0


def timed(events: list, pauses: dict[int, float]) -> Recording:
    """`events` 0.01 s apart, with `pauses[i]` seconds more before event i; each event that
    carries its own time gets the same one."""
    times, t = [], 0.0
    for i, _ev in enumerate(events):
        t += 0.01 + pauses.get(i, 0.0)
        times.append(t)
    events = [
        dataclasses.replace(ev, at=EPOCH + t) if hasattr(ev, "at") else ev
        for ev, t in zip(events, times, strict=True)
    ]
    return Recording("timed.kltui.jsonl", {"created": EPOCH, "version": 1}, events, times, False)


def cut_at_phase(events: list, helper: str, phase: str, rename: str | None = None) -> list:
    """The events up to `helper`'s first PhaseChanged to `phase` (renamed to `rename`)."""
    i = next(
        k
        for k, ev in enumerate(events)
        if isinstance(ev, PhaseChanged) and ev.helper == helper and ev.phase == phase
    )
    last = events[i] if rename is None else dataclasses.replace(events[i], phase=rename)
    return [*events[:i], last]


def row_of(app: KltuiApp, helper: str) -> str:
    lines = drawn(app.query_one("HelperProgress")).splitlines()
    return " ".join(next(line for line in lines if f" {helper} " in line).split())


def decode_took(events: list, helper: str, seconds: float) -> dict[int, float]:
    """A pause that makes `helper`'s scored decode take `seconds` (before its next flush)."""
    start = next(
        k
        for k, ev in enumerate(events)
        if isinstance(ev, PhaseChanged) and ev.helper == helper and ev.phase == "decode"
    )
    end = next(
        k
        for k, ev in enumerate(events)
        if k > start and isinstance(ev, PhaseChanged) and ev.helper == helper
    )
    return {end: seconds}


async def test_turn_one_gets_an_eta_from_an_earlier_decode_of_the_same_size():
    run = synth.session(n=4, length=16, helpers=("match", "decode_cache_hit"), finish=False)
    # decode_cache_hit in turn 1 (never streamed), 30 s after it began; match decoded in 60 s
    events = cut_at_phase(run, "decode_cache_hit", "decode", rename="turn1")
    pauses = decode_took(events, "match", 60.0)
    events.append(Problem(synth.URL, "a line 30 s later", fatal=False))
    pauses[len(events) - 1] = 30.0
    app = KltuiApp(ReplayFeed(timed(events, pauses), speed=None, instant=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await replayed(pilot, app)
        row = row_of(app, "decode_cache_hit")
        assert before_decode_line((0, 3), 30.0, 30.0, Waiting.FIRST_TOKENS) in row, row


async def test_without_an_earlier_decode_it_says_it_is_estimating_and_on_what():
    run = synth.session(n=4, length=16, helpers=("match",), finish=False)
    events = cut_at_phase(run, "match", "decode")  # the decode sent, no token back yet
    events.append(Problem(synth.URL, "a line 12 s later", fatal=False))
    app = KltuiApp(ReplayFeed(timed(events, {len(events) - 1: 12.0}), speed=None, instant=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await replayed(pilot, app)
        row = row_of(app, "match")
        assert before_decode_line((0, 2), 12.0, None, Waiting.FIRST_TOKENS) in row, row
    # 80 columns: the counts and the ETA only where there is one
    app = KltuiApp(ReplayFeed(timed(events, {len(events) - 1: 12.0}), speed=None, instant=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed(pilot, app)
        row = row_of(app, "match")
        assert "0/2" in row and "estimating" not in row and "ETA" not in row, row


async def test_the_replay_waits_for_its_answer_with_the_requests_before_it_counted():
    run = synth.session(n=4, length=16, helpers=("match",), finish=False)
    events = cut_at_phase(run, "match", "prefill")
    events.append(Problem(synth.URL, "a line 5 s later", fatal=False))
    app = KltuiApp(ReplayFeed(timed(events, {len(events) - 1: 5.0}), speed=None, instant=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await replayed(pilot, app)
        row = row_of(app, "match")
        assert before_decode_line((1, 2), 5.0, None, Waiting.ANSWER) in row, row
