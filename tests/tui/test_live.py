"""Pilot tests against a real run: the embedded reference server over HTTP."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from textual.widgets import Footer
from textual.widgets._toast import Toast

from kltui.run import driver
from kltui.run.config import RunConfig
from kltui.session.events import Problem, RunFinished, RunStarted
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore
from kltui.tui import app as app_module
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed
from kltui.tui.launch import exit_lines
from kltui.tui.screens.drilldown import DrillDown
from kltui.tui.widgets.diagnosis import DiagnosisBar
from kltui.tui.widgets.header import ServersPanel
from kltui.tui.widgets.heatmap import Heatmap
from tests.tui.kit import drawn, until

SIZE = (140, 45)


@pytest.fixture(scope="module")
def server_url(reference_servers):
    """The session's shared reference server with the default settings."""
    return reference_servers.url()


def small(url: str) -> RunConfig:
    return RunConfig(servers=[url], samples=6, max_new_tokens=16, max_prompt_tokens=64)


def footer_keys(app: KltuiApp) -> str:
    """The keys the footer shows now."""
    return " ".join(drawn(k) for k in app.query_one(Footer).query("FooterKey"))


def count_polls(app: KltuiApp) -> list:
    """The answers of the watch's server polls from now on, as they come."""
    watch = app._watch
    assert watch is not None
    real, answers = watch.poll, []

    async def poll():
        answers.append(await real())
        return answers[-1]

    watch.poll = poll
    return answers


def finished(app: KltuiApp) -> bool:
    return app.store is not None and app.store.finished is not None and not app.status.running


async def test_live_run_navigate_rerun_and_record(server_url, tmp_path):
    record = tmp_path / "run.kltui.jsonl"
    app = KltuiApp(LiveFeed(small(server_url), str(record)), screenshot_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: finished(app), timeout=60)
        store = app.store
        assert store.finished.verdict in ("pass", "fail")
        assert [st.phase for st in store.helpers.values()] == ["done"] * 3
        assert all(st.n_scored + len(st.skipped) == 6 for st in store.helpers.values())
        server = store.run.servers[0]
        assert "error" not in server and server["url"] == server_url
        app.refresh_views()
        await pilot.pause()
        assert server_url in drawn(app.query_one(ServersPanel))

        app.select_helper(f"match@{server_url}")
        await pilot.press("right_square_bracket")
        assert app.selected_state().helper == "prefill_cache_hit"
        hm = app.query_one(Heatmap)
        assert hm.state is app.selected_state()
        await pilot.press("f")
        fd = app.selected_state().summary.first_divergence
        if fd:
            assert (hm.cursor_row, hm.cursor_pos) == (fd["sample"], fd["position"])
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DrillDown))
        drill = app.screen
        assert drill.table.row_count == drill.scored.k3.size == 16
        await pilot.press("escape")

        first = app.store
        await pilot.press("r")
        await until(pilot, lambda: app.store is not first and finished(app), timeout=60)
        assert len(app.history) == 2
        # the same prompts on the same CPU server: per-token values repeat exactly
        assert app.history[1].identical is True
        await pilot.press("q")
    assert app.return_value == 0 if app.history[-1].verdict == "pass" else 1
    second = tmp_path / "run-2.kltui.jsonl"
    assert record.exists() and second.exists()
    replayed = SessionStore()
    for ev in read_recording(str(record)).events:
        replayed.apply(ev)
    for key, st in first.helpers.items():
        assert replayed.helpers[key].summary.avg_kl_div == st.summary.avg_kl_div


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_server_down_shows_status_retries_and_quits_cleanly(tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "RETRY_FIRST_S", 8)  # a countdown long enough to look at
    held, release, waiting = asyncio.Event(), asyncio.Event(), []
    send = httpx.AsyncClient.send

    async def held_send(self, *args, **kwargs):
        if held.is_set() and not release.is_set():
            waiting.append(True)
            await release.wait()
        return await send(self, *args, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "send", held_send)
    url = f"http://127.0.0.1:{_free_port()}"
    record = tmp_path / "down.kltui.jsonl"
    app = KltuiApp(LiveFeed(RunConfig(servers=[url], samples=2), str(record)))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.status.retry_in is not None, timeout=30)
        panel = app.query_one(ServersPanel)
        await until(pilot, lambda: "retrying in" in drawn(panel))
        assert "down: cannot connect" in drawn(panel)
        assert app.store.problems and app.store.problems[0].phase == "connect"
        assert app.history == []  # a failed connection is not a run
        # the error as `kltui check` prints it, in the diagnosis panel, not "waiting for ..."
        line = f"error: {url}: cannot connect for /health"
        diagnosis = drawn(app.query_one(DiagnosisBar))
        assert line in diagnosis and "waiting for a helper" not in diagnosis, diagnosis
        # the footer offers `e` now that there are problems
        await until(pilot, lambda: " e Problems" in footer_keys(app))
        # while the next attempt connects, the last one's error stays on the dashboard; the
        # attempt is held at its first request until this is read (a refused port fails in
        # milliseconds: a loaded CI machine saw the attempt fail again before the assertion)
        held.set()
        await until(pilot, lambda: bool(waiting), 30)
        assert app.store.run is None and app.status.retry_in is None  # connecting
        app.refresh_views()
        await pilot.pause()
        assert line in drawn(panel) and line in drawn(app.query_one(DiagnosisBar))
        release.set()
        await until(pilot, lambda: app.status.retry_in is not None, timeout=30)
        await pilot.press("q")
    assert app.return_value == 3
    # and it is what the terminal shows after quit
    (printed,) = exit_lines(app)
    assert printed.startswith(line) and "All connection attempts failed" in printed, printed
    # recorded as `kltui check` records the same dead server: the last attempt, in one file
    events = read_recording(str(record)).events
    assert isinstance(events[0], RunStarted) and events[0].servers[0]["error"]
    assert isinstance(events[-1], RunFinished) and events[-1].verdict == "error"
    assert [ev.phase for ev in events if isinstance(ev, Problem)] == ["connect"]
    assert not list(tmp_path.glob("down-*"))


async def test_a_dead_server_is_one_run_one_toast_one_recording(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}"
    record = tmp_path / "dead.kltui.jsonl"
    app = KltuiApp(LiveFeed(RunConfig(servers=[url], samples=2), str(record)))
    run_ids = []

    def seen() -> bool:
        if app.store is not None and app.store.run is not None:
            if app.store.run.run_id not in run_ids:
                run_ids.append(app.store.run.run_id)
        return app.status.retry_attempt >= 2 and app.status.retry_in is not None

    async with app.run_test(size=SIZE, notifications=True) as pilot:
        toasts: list[str] = []

        def shown() -> list[str]:
            toasts[:] = [" ".join(drawn(t).split()) for t in app.screen.query(Toast)]
            return toasts

        await until(pilot, lambda: any("cannot connect" in t for t in shown()), timeout=60)
        await until(pilot, seen, timeout=60)  # three attempts, 1 s and 2 s apart
        # one toast for the three attempts: never two at once (a toast shown for 4 s may be
        # gone, and shown again, by the third attempt on a loaded machine)
        assert len([t for t in shown() if "cannot connect" in t]) <= 1, toasts
        await pilot.press("q")
    assert len(run_ids) == 1, run_ids  # the retries of one run are that one run
    (started,) = [ev for ev in read_recording(str(record)).events if isinstance(ev, RunStarted)]
    assert started.run_id == run_ids[0]


async def test_watch_reruns_when_the_server_identity_changes(server_url, monkeypatch):
    monkeypatch.setattr(app_module, "POLL_INTERVAL_S", 0.2)
    cfg = small(server_url)
    cfg.helpers, cfg.samples = ["match"], 4
    app = KltuiApp(LiveFeed(cfg, None), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: finished(app), timeout=60)
        assert app.status.watch is None or "watching" in app.status.watch
        polls = count_polls(app)
        await until(pilot, lambda: len(polls) >= 2)
        assert len(app.history) == 1  # polled twice, no restart: no re-run
        # what a restart looks like to the poller: a different start time than the last run saw
        app._watch.baseline = {u: ("restarted",) for u in app._watch.baseline}
        await until(pilot, lambda: len(app.history) == 2 and finished(app), timeout=60)
        await pilot.press("q")
