"""The real SGLang router (`sglang-router` 0.3.2) in front of two real SGLang 0.5.23 workers
(one with page size 4): `--server ROUTER` is refused with the reason; `kltui check --router`
checks both workers by their own URLs and compares them bit for bit."""

from __future__ import annotations

import asyncio

import pytest

from kltui.cli.commands import main
from kltui.engines.router import RouterWorker, router_refusal
from kltui.errors import EXIT_USAGE
from tests.integration.checkrun import check_run
from tests.router import Router

from .conftest import SGLANG_DEFAULT_FLAGS


@pytest.fixture(scope="module")
def real_fleet(servers, sglang_url):
    # only the page size differs from the default server
    page4 = servers.get("sglang-page4", "sglang", *SGLANG_DEFAULT_FLAGS, "--page-size", "4")
    try:
        with Router([sglang_url, page4]) as router:
            yield router, [sglang_url, page4]
    finally:
        servers.stop("sglang-page4")  # an idle scheduler keeps a core busy


def test_server_pointed_at_the_real_router_is_refused(real_fleet, capsys):
    router, workers = real_fleet
    assert main(["check", "--server", router.url, "--no-record", "--samples", "2"]) == EXIT_USAGE
    err = capsys.readouterr().err
    refusal = router_refusal(router.url, [RouterWorker(u) for u in workers])  # 2 workers
    assert f"kltui: error: {refusal}" in err.splitlines()


def test_router_fleet_over_real_sglang_workers(real_fleet, tmp_path):
    router, workers = real_fleet
    rc, res, text = asyncio.run(
        check_run(
            [],
            tmp_path,
            width=400,
            router=router.url,
            samples=4,
            max_new_tokens=16,
            max_prompt_tokens=48,
        )
    )
    assert rc == 0, text
    f = res["fleet"]
    assert sorted(f["replicas"]) == sorted(workers)
    assert {w["worker_type"] for w in f["workers"]} == {"regular"}
    assert all(w["tested"] and w["is_healthy"] for w in f["workers"])
    for h in f["helpers"]:
        for url in workers:
            assert res["helpers"][f"{h}@{url}"]["status"] == "pass"
        cell = f["matrices"][h][0][1]
        assert cell is not None and cell["identical"] is not None, (h, cell)
    pages = {s["url"]: s["page_size"] for s in res["servers"]}
    assert sorted(pages.values()) == [1, 4]
    if f["identical"]:  # one group of both (its words: tests/unit/words/test_golden_fleet.py)
        assert [sorted(g["replicas"]) for g in f["groups"]] == [sorted(workers)]
        assert f["odd"] == []
    else:
        assert "page_size" in f["settings_differ"] and "first differs from" in f["summary"]
    assert f"fleet comparison: {f['summary']}" in text
