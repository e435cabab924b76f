"""Fleets behind the real SGLang router (`sglang-router` from PyPI) in front of reference
servers: `--server ROUTER` is refused with the reason; `--router ROUTER` checks every worker by
its own URL and compares them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.text import Text

from kltui.cli.commands import main
from kltui.engines.router import PD_NOTE, RouterWorker, router_refusal
from kltui.errors import EXIT_USAGE
from kltui.outputs.headless import fleet_lines, verdict_line
from kltui.outputs.reports.html import _gate_html as gate_html
from kltui.outputs.reports.html import html_report
from kltui.outputs.reports.junit import junit_report
from kltui.outputs.reports.md import fleet_md, gate_text, md_report
from kltui.readings.fleet import fleet
from kltui.readings.fleet_model import Fleet
from kltui.run import driver
from kltui.run.config import RunConfig
from kltui.session.events import HelperFinished, HelperStarted, RunStarted
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed
from kltui.tui.screens.fleet import FleetScreen
from kltui.untrusted import html_text as esc
from kltui.untrusted import md_text
from kltui.words.fleet import (
    asides,
    failure_line,
    odd_replica_failure,
    replica_cells,
    setting_contrast,
    summary_line,
)
from tests.integration.checkrun import check_run
from tests.json_contract import read_check
from tests.router import Router
from tests.tui.kit import until


@pytest.fixture(scope="module")
def two_workers(reference_servers):
    a = reference_servers.url(deterministic=True)
    b = reference_servers.url(deterministic=True, page_size=4)
    with Router([a, b]) as router:
        yield router


@pytest.mark.parametrize("command", ["check", "tui"])
def test_server_pointed_at_a_router_is_refused_with_the_reason(two_workers, capsys, command):
    rc = main([command, "--server", two_workers.url, "--samples", "2"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    (line,) = [ln for ln in err.splitlines() if ln.startswith("kltui: error:")]
    # the refusal counts the router's workers and says why (words: tests/unit/words)
    workers = [RouterWorker(u) for u in two_workers.workers]
    assert line == f"kltui: error: {router_refusal(two_workers.url, workers)}"


def test_router_flag_on_a_server_says_it_is_no_router(reference_servers, capsys):
    rc = main(["check", "--router", reference_servers.url(deterministic=True), "--samples", "2"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    assert "GET /workers answered no worker list, so this is not an SGLang router" in err


SMALL = dict(samples=4, max_new_tokens=12, max_prompt_tokens=48)


@pytest.fixture(scope="module")
def three_workers(reference_servers):
    """Two deterministic replicas (page size 1 and 4: the same bits) and an odd one out that
    runs without deterministic inference."""
    a = reference_servers.url(deterministic=True)
    b = reference_servers.url(deterministic=True, page_size=4)
    odd = reference_servers.url(deterministic=False, random_seed=0)
    with Router([a, b, odd]) as router:
        yield router, (a, b), odd


def reports(tmp_path: Path) -> tuple[str, str, str]:
    """MD, HTML and JUnit of the recorded run (what `kltui report` writes)."""
    store = fold(read_recording(str(tmp_path / "r.kltui.jsonl")))[-1]
    return md_report(store), html_report(store), junit_report(store)


def reading(tmp_path: Path, name: str = "r.kltui.jsonl") -> Fleet:
    """The fleet reading of the recorded run (what every view renders)."""
    fl = fleet(fold(read_recording(str(tmp_path / name)))[-1])
    assert fl is not None
    return fl


def verdict_shown(tmp_path: Path, name: str = "r.kltui.jsonl") -> str:
    """The console's verdict line of the recorded run, as plain text."""
    return Text.from_markup(verdict_line(fold(read_recording(str(tmp_path / name)))[-1])).plain


async def test_router_fleet_names_the_odd_one_out_everywhere(three_workers, tmp_path):
    router, same, odd = three_workers
    rc, res, text = await check_run(
        [], tmp_path, width=400, record="r.kltui.jsonl", router=router.url, **SMALL
    )
    assert rc == 0, text
    f = res["fleet"]
    assert f["router"] == router.url
    assert sorted(f["replicas"]) == sorted([*same, odd])
    assert [w["worker_type"] for w in f["workers"]] == ["regular"] * 3
    assert f["identical"] is False
    assert [sorted(g["replicas"]) for g in f["groups"]] == [sorted(same), [odd]]
    assert f["settings_differ"] == {"enable_deterministic_inference": [True, False]}
    (o,) = f["odd"]
    assert o["replica"] == odd and o["majority"] is True
    first = o["first_difference"]
    assert first["helper"] in f["helpers"] and isinstance(first["position"], int)
    m = f["matrices"]["match"]
    i, j, k = (f["replicas"].index(u) for u in (*same, odd))
    assert m[i][j]["identical"] is True and m[i][k]["identical"] is False
    assert m[i][i] is None and m[k][i] == m[i][k]
    # the odd one: deterministic inference off here, on in the largest group
    assert o["settings"] == {"enable_deterministic_inference": [True, False]}
    assert o["group"] == 1 and o["against"] in same
    at = f"sample {first['sample']} @ {first['position']}"
    fl = reading(tmp_path)  # the reading every view renders (words: tests/unit/words)
    assert [x.to_json() for x in fl.odd] == f["odd"] and fl.group_of()[odd] == 1
    assert replica_cells(fl)[odd]["match"] == "differs"
    summary = f["summary"]
    assert summary == summary_line(fl) and at in summary
    assert all(line.plain in text for line in fleet_lines(fl))  # summary and each replica
    assert "servers compared:" not in text  # the fleet replaces the pairs with the first
    md, html, junit = reports(tmp_path)
    contrast = setting_contrast(fl.odd[0])
    assert md_text(summary_line(fl)) in md and md_text(contrast) in md
    assert f"| {odd} | 2 | differs" in md and at.replace("@", "\\@") in md
    assert "<h2>Fleet</h2>" in html and esc(summary_line(fl)) in html
    assert f"<code>{odd}</code>" in html and at in html
    (case,) = [
        c for c in ET.fromstring(junit).iter("testcase") if c.get("name") == f"replica[{odd}]"
    ]
    # the odd one's case says its words (test_golden_ablate_fleet_case.py), at the JSON's place
    failed = case.find("failure")
    assert failed is not None and failed.get("message") == odd_replica_failure(fl.odd[0], 2)
    assert at in failed.get("message", "")
    for url in same:
        assert f'<testcase classname="kltui.fleet" name="replica[{url}]" />' in junit
    # the default gate: replicas that differ are no failed run, and no fleet case
    assert (f["require"], f["failure"], res["verdict"]) == ("gate", None, "pass")
    assert 'name="identical"' not in junit and "fleet must be identical" not in md + text
    # the workers ran at once (--fleet-concurrency 4 by default): each started its first
    # helper before any finished its last
    events = read_recording(str(tmp_path / "r.kltui.jsonl")).events
    starts = [i for i, ev in enumerate(events) if isinstance(ev, HelperStarted)]
    ends = [
        i
        for i, ev in enumerate(events)
        if isinstance(ev, HelperFinished) and ev.helper == f["helpers"][-1]
    ]
    first_of_each = sorted(starts)[:3]
    assert {events[i].server for i in first_of_each} == set(f["replicas"])
    assert max(first_of_each) < min(ends)
    assert res["config"]["fleet_concurrency"] == 4


async def test_fleet_concurrency_one_checks_the_workers_one_after_the_other(
    three_workers, tmp_path
):
    router, _, _ = three_workers
    rc, res, text = await check_run(
        [],
        tmp_path,
        record="r.kltui.jsonl",
        router=router.url,
        fleet_concurrency=1,
        helpers=["match"],
        **SMALL,
    )
    assert rc == 0, text
    events = read_recording(str(tmp_path / "r.kltui.jsonl")).events
    order = [
        (type(ev).__name__, ev.server)
        for ev in events
        if isinstance(ev, HelperStarted | HelperFinished)
    ]
    urls = res["fleet"]["replicas"]
    assert order == [(k, u) for u in urls for k in ("HelperStarted", "HelperFinished")]


async def fleet_with_a_dying_worker(reference_servers, tmp_path, monkeypatch, kill_when, **kw):
    """`check --router` over two live workers and a third stopped at the first event for which
    kill_when(event, its url) holds; (a, b, the stopped server, check_run's result)."""
    a = reference_servers.url(deterministic=True)
    b = reference_servers.url(deterministic=True, page_size=4)
    srv = reference_servers.own(deterministic=True)  # killed below, so not a shared one
    real = driver.run_session

    async def killing(cfg, *args, **kwargs):
        async for ev in real(cfg, *args, **kwargs):
            yield ev
            if kill_when(ev, srv.url):
                srv.stop()

    monkeypatch.setattr(driver, "run_session", killing)
    try:
        with Router([a, b, srv.url]) as router:
            result = await check_run([], tmp_path, width=400, router=router.url, **SMALL, **kw)
    finally:
        srv.stop()
    return a, b, srv, result


async def test_a_worker_dying_mid_run_is_reported_and_the_others_finish(
    reference_servers, tmp_path, monkeypatch
):
    def after_match(ev, url):
        return isinstance(ev, HelperFinished) and (ev.helper, ev.server) == ("match", url)

    a, b, srv, (rc, res, text) = await fleet_with_a_dying_worker(
        reference_servers, tmp_path, monkeypatch, after_match, record="r.kltui.jsonl"
    )
    assert rc == 3, text
    f = res["fleet"]
    for url in (a, b):  # both live workers ran every helper to the end
        for h in f["helpers"]:
            assert res["helpers"][f"{h}@{url}"]["status"] == "pass"
    assert any(p["source"] == srv.url and p["fatal"] for p in res["problems"])
    dead = f["replicas"].index(srv.url)
    ia, ib = f["replicas"].index(a), f["replicas"].index(b)
    assert f["matrices"]["match"][ia][dead]["identical"] is True
    assert f["matrices"]["decode_cache_hit"][ia][dead] is None
    assert f["matrices"]["decode_cache_hit"][ia][ib]["identical"] is True
    # equal to both on match, compared on nothing else: set aside, never "identical" (issue 28)
    assert f["identical"] is None
    assert [sorted(g["replicas"]) for g in f["groups"]] == [sorted([a, b])]
    assert "decode_cache_hit" in f["not_fully_compared"][srv.url]
    assert all(line.plain in text for line in fleet_lines(reading(tmp_path)))


async def test_tui_on_a_router_runs_the_fleet_and_opens_a_replica(three_workers):
    router, same, odd = three_workers
    cfg = RunConfig(router=router.url, helpers=["match"], yes_flush=True, **SMALL)
    app = KltuiApp(LiveFeed(cfg, None))
    async with app.run_test(size=(140, 45)) as pilot:
        assert app.feed.servers == [router.url]  # "connecting to" names the router
        await until(pilot, lambda: app.store is not None and app.store.finished, timeout=120)
        assert {st.server for st in app.store.helpers.values()} == {*same, odd}
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        table = app.screen.query_one("#fleet-table")
        assert table.row_count == 3 and str(table.get_row(odd)[2]) == "≠ differs"
        table.move_cursor(row=app.screen.fleet.replicas.index(odd))
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, FleetScreen))
        assert app.selected == f"match@{odd}"


def test_a_prefill_decode_fleet_is_listed_and_refused_with_why(reference_servers, capsys):
    a = reference_servers.url(deterministic=True)
    b = reference_servers.url(deterministic=True, page_size=4)
    pd = ("--pd-disaggregation", "--prefill", a, "--decode", b)
    with Router([a, b], extra=pd) as router:  # in PD mode the router lists these two only
        rc = main(["check", "--router", router.url, "--no-record", "--samples", "2"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    # both workers are PD halves: the refusal names their types and says why (PD_NOTE)
    assert f"(worker types: decode, prefill); {PD_NOTE}" in " ".join(err.split())


async def test_identical_fleet_passes_when_every_replica_is_bit_identical(two_workers, tmp_path):
    rc, res, text = await check_run(
        [],
        tmp_path,
        width=400,
        record="r.kltui.jsonl",
        router=two_workers.url,
        fleet_require="identical",
        **SMALL,
    )
    assert rc == 0, text
    f = res["fleet"]
    assert (f["identical"], f["require"], f["failure"]) == (True, "identical", None)
    assert res["verdict"] == "pass" and res["config"]["fleet_require"] == "identical"
    assert "fleet must be identical" not in text
    fl = reading(tmp_path)  # what the reports say "passed" on (words: tests/unit/words)
    assert failure_line(fl) is None and gate_text(fl) == "passed"
    md, html, junit = reports(tmp_path)
    assert all(line in md for line in fleet_md(fl))  # the gate's line among them
    assert gate_html(fl) in html
    assert '<testcase classname="kltui.fleet" name="identical" />' in junit


def test_identical_fleet_with_an_odd_replica_fails_with_why(three_workers, tmp_path, capsys):
    router, same, odd = three_workers
    json_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    argv = ["check", "--router", router.url, "--fleet-require", "identical"]
    argv += ["--samples", "4", "--max-new-tokens", "12", "--max-prompt-tokens", "48"]
    argv += ["--json", str(json_path), "--junit", str(junit_path)]
    argv += ["--record", str(tmp_path / "r.kltui.jsonl")]
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc == 1, out
    res = read_check(json_path)
    f = res["fleet"]
    assert res["verdict"] == "fail" and f["require"] == "identical"
    # each replica passes its own helpers: only the fleet gate fails the run
    assert all(h["status"] == "pass" for h in res["helpers"].values())
    (o,) = f["odd"]
    assert o["replica"] == odd and o["majority"] is True and len(f["groups"]) == 2
    assert o["against"] in same  # the largest group's first replica, in the run's (URL) order
    assert o["first_difference"] is not None
    fl = reading(tmp_path)  # the gate's failure is its words (tests/unit/words)
    assert fl.failed and [x.to_json() for x in fl.odd] == f["odd"]
    why = f["failure"]
    assert why == failure_line(fl) and odd in why
    assert verdict_shown(tmp_path) in out.splitlines(), out
    cases = ET.parse(junit_path).getroot().iter("testcase")
    (case,) = [
        c for c in cases if (c.get("classname"), c.get("name")) == ("kltui.fleet", "identical")
    ]
    (failure,) = case.iter("failure")
    assert (failure.get("message"), failure.get("type")) == (why, "fleet-require")


async def test_identical_fleet_of_one_replica_is_inconclusive(reference_servers, tmp_path):
    with Router([reference_servers.url(deterministic=True)]) as router:
        rc, res, text = await check_run(
            [],
            tmp_path,
            width=400,
            router=router.url,
            fleet_require="identical",
            helpers=["match"],
            **SMALL,
        )
    assert rc == 1, text
    f = res["fleet"]
    assert f["identical"] is None and res["verdict"] == "fail"
    assert len(f["replicas"]) == 1 and f["uncompared"] == {} and f["odd"] == []
    fl = reading(tmp_path, "r.jsonl")
    assert fl.failed and f["failure"] == failure_line(fl)
    assert verdict_shown(tmp_path, "r.jsonl") in text.splitlines()


async def test_identical_fleet_with_an_uncompared_replica_is_inconclusive(
    reference_servers, tmp_path, monkeypatch
):
    def identified(ev, url):  # identified, then gone before its first sample
        return isinstance(ev, RunStarted)

    a, b, srv, (rc, res, text) = await fleet_with_a_dying_worker(
        reference_servers,
        tmp_path,
        monkeypatch,
        identified,
        fleet_require="identical",
        helpers=["match"],
    )
    assert rc == 3, text  # the dead worker is an error, which stays the verdict
    f = res["fleet"]
    assert list(f["uncompared"]) == [srv.url] and f["identical"] is None
    assert [sorted(g["replicas"]) for g in f["groups"]] == [sorted([a, b])]
    fl = reading(tmp_path, "r.jsonl")
    assert fl.failed and asides(fl.uncompared) == f["uncompared"]
    why = f["failure"]
    assert why == failure_line(fl) and srv.url in why
    assert verdict_shown(tmp_path, "r.jsonl") in text.splitlines()


def test_fleet_require_without_a_router_is_refused(capsys):
    rc = main(["check", "--server", "127.0.0.1:9", "--fleet-require", "identical"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    assert "--fleet-require identical needs a fleet: give --router HOST:PORT" in err
