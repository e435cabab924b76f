"""A server replaced on its URL between two runs of --repeat (issue 28), against real reference
servers: /server_info is read again before each run, and the re-run comparison says the server
was replaced instead of calling the change run-to-run non-determinism."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from kltui.readings.compare import NotComparable, rerun_equality
from kltui.reference.launcher import ReferenceServer
from kltui.run import driver
from kltui.run.driver import nth_recording
from kltui.session.events import RunFinished
from kltui.words.compare import rerun, rerun_reason
from tests.integration.checkrun import check_run, recorded

SMALL = dict(samples=3, max_new_tokens=8, max_prompt_tokens=48, helpers=["match"])


async def test_a_server_replaced_between_repeats_is_not_called_nondeterminism(
    reference_servers, tmp_path, monkeypatch
):
    first = reference_servers.own(deterministic=True, random_seed=1)
    port = first.port
    started: list[ReferenceServer] = []
    real = driver.run_session

    async def replace_after_run_1(cfg, *args, **kw) -> AsyncIterator:
        async for ev in real(cfg, *args, **kw):
            yield ev
            if isinstance(ev, RunFinished) and not started:
                first.stop()
                # the same URL, another process: other seed, deterministic inference off
                started.append(
                    ReferenceServer(random_seed=2, extra_args=("--port", str(port))).start()
                )

    monkeypatch.setattr(driver, "run_session", replace_after_run_1)
    try:
        rc, res, text = await check_run(
            first.url, tmp_path, width=400, run_kw={"repeat": 2}, **SMALL
        )
    finally:
        for srv in started:
            srv.stop()
    assert started and started[0].url == first.url
    (eq,) = res["repeat"]["equality"]
    assert eq["identical"] is None and res["repeat"]["all_identical"] is None
    reason = eq["reason"]
    # the comparison as read from the recording: its kind and what changed; JSON and console
    # say its words (golden: tests/unit/words/test_compare_words.py)
    before, after = (recorded(tmp_path, Path(nth_recording("r.jsonl", n)).name) for n in (1, 2))
    typed = rerun_equality(before, after, run=2)
    assert (typed.identical, typed.why, typed.previous) == (None, NotComparable.REPLACED, 1)
    assert {"startup_time", "random_seed", "enable_deterministic_inference"} <= set(
        typed.replaced[first.url]
    )
    assert reason == rerun_reason(typed) == rerun(typed)
    changed = eq["server_replaced"][first.url]
    assert changed["random_seed"] == [1, 2]
    assert changed["enable_deterministic_inference"] == [True, False]
    assert f"re-run 2 vs 1: {reason}" in text
    assert "differs at" not in text.split("re-run 2 vs 1:")[1]
