"""The one run driver (kltui/run/driver.py) against real reference servers: the n-th run's
recording name, --repeat, Ctrl-C ending a session as interrupted (130), and several servers
measured at once with one dying mid-run (the other completes, the dead one is reported)."""

from __future__ import annotations

import asyncio
import os
import signal

from kltui.errors import EXIT_INTERRUPTED, EXIT_SERVER
from kltui.run.config import RunConfig
from kltui.run.driver import RunDriver, RunOutcome, cancel_on_signals
from kltui.session.events import Event, HelperFinished, HelperStarted, PhaseChanged, RunFinished
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore

SMALL = dict(samples=3, max_new_tokens=8, max_prompt_tokens=48, helpers=["match"])


class Collect:
    """A RunView that keeps everything it is shown; `on_event` may act on an event."""

    def __init__(self, on_event=None) -> None:
        self.events: list[Event] = []
        self.started: list[int] = []
        self.ended: list[RunOutcome] = []
        self.on_event = on_event

    def start_run(self, run_no: int) -> SessionStore:
        self.started.append(run_no)
        return SessionStore()

    def event(self, ev: Event) -> None:
        self.events.append(ev)
        if self.on_event is not None:
            self.on_event(ev)

    def run_ended(self, outcome: RunOutcome) -> None:
        self.ended.append(outcome)

    def retrying(self, seconds, attempt) -> None:
        raise AssertionError("the driver retries only with retry_connect")


async def test_repeat_names_each_runs_recording_and_compares_it(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True)
    record = tmp_path / "x.kltui.jsonl"
    driver = RunDriver(RunConfig(servers=[url], **SMALL), record=str(record))
    view = Collect()
    out = await driver.session(view, repeat=3)
    assert view.started == [1, 2, 3] and [r.run_no for r in out.runs] == [1, 2, 3]
    assert [r.recording for r in out.runs] == [
        str(record),
        str(tmp_path / "x-2.kltui.jsonl"),
        str(tmp_path / "x-3.kltui.jsonl"),
    ]
    for r in out.runs:  # each file holds its own run, whole
        events = read_recording(r.recording).events
        assert isinstance(events[-1], RunFinished) and events[-1].verdict == r.verdict
    assert out.runs[0].equality is None
    # a deterministic server: each re-run is bit-identical to the one before
    assert [(e.run, e.previous, e.identical) for e in
            (r.equality for r in out.runs[1:])] == [(2, 1, True), (3, 2, True)]  # fmt: skip
    assert out.exit_code == 0 and not out.interrupted


async def test_ctrl_c_ends_the_session_as_interrupted(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True)
    record = tmp_path / "c.kltui.jsonl"
    driver = RunDriver(RunConfig(servers=[url], **SMALL), record=str(record))
    sent = []

    def ctrl_c(ev: Event) -> None:
        # while the server decodes: the run is waiting on it when the signal comes
        if isinstance(ev, PhaseChanged) and ev.phase == "decode" and not sent:
            sent.append(ev)
            os.kill(os.getpid(), signal.SIGINT)

    view = Collect(ctrl_c)
    with cancel_on_signals():
        out = await driver.session(view, repeat=2)
    assert sent and out.interrupted and out.exit_code == EXIT_INTERRUPTED
    (run,) = out.runs  # the second run never started
    assert run.interrupted and run.verdict == "interrupted" and view.started == [1]
    events = read_recording(str(record)).events
    assert isinstance(events[-1], RunFinished) and events[-1].verdict == "interrupted"
    assert not any(isinstance(e, HelperFinished) for e in events)  # cut short mid-helper
    assert not (tmp_path / "c-2.kltui.jsonl").exists()
    assert asyncio.current_task().cancelling() == 0  # the test's own task goes on


async def test_two_servers_at_once_one_dies_the_other_completes(reference_servers, tmp_path):
    live = reference_servers.url(deterministic=True)
    dying = reference_servers.own(deterministic=True)

    def kill(ev: Event) -> None:
        if isinstance(ev, HelperFinished) and ev.server == dying.url and ev.helper == "match":
            dying.stop()

    cfg = RunConfig(
        servers=[live, dying.url],
        concurrency=2,
        **{**SMALL, "helpers": ["match", "prefill_cache_hit", "decode_cache_hit"]},
    )
    view = Collect(kill)
    try:
        outcome = await RunDriver(cfg).run(view)
    finally:
        dying.stop()
    store = outcome.store
    # both servers were measured at once: the second one started before the first finished
    kinds = [(type(e).__name__, getattr(e, "server", None)) for e in view.events]
    assert kinds.index(("HelperStarted", dying.url)) < kinds.index(("HelperFinished", live))
    # the live server ran every helper to its end and passed
    for h in ("match", "prefill_cache_hit", "decode_cache_hit"):
        st = store.helpers[f"{h}@{live}"]
        assert st.summary is not None and st.summary.status == "pass", h
    # the dead one is reported (a fatal problem naming it) and the run is an error (exit 3)
    assert any(p.fatal and dying.url in p.source for p in store.problems), store.problems
    assert outcome.verdict == "error" and outcome.exit_code == EXIT_SERVER
    started = [e for e in view.events if isinstance(e, HelperStarted) and e.server == dying.url]
    assert started and started[0].helper == "match"
