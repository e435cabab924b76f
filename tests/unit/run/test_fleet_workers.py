"""The router's worker list read (engines/router.parse_workers), what a fleet run records of
it, and the workers that joined, left or went unhealthy during a run (run/fleet._changes)."""

from __future__ import annotations

from kltui.engines.router import PD_NOTE, RouterWorker, parse_workers
from kltui.run.fleet import _changes, fleet_record


def doc(*workers: dict) -> dict:
    return {"workers": list(workers), "total": len(workers), "stats": {}}


def test_parse_workers_reads_types_health_and_makes_text_inert():
    ws = parse_workers(
        doc(
            {"url": "http://a:1/", "worker_type": "regular", "is_healthy": True},
            {"url": "http://b:1", "worker_type": "prefill", "is_healthy": False, "metadata": 3},
            {"url": "http://c:1\x1b[31m", "worker_type": "decode"},
        )
    )
    assert [w.url for w in ws] == ["http://a:1", "http://b:1", "http://c:1\\x1b[31m"]
    assert [w.disaggregated for w in ws] == [False, True, True]
    assert [w.is_healthy for w in ws] == [True, False, None] and ws[1].metadata == {}


def test_what_is_no_worker_list_is_none():
    for bad in ({}, {"workers": {}}, {"workers": [{"worker_type": "regular"}]}, [], "OK"):
        assert parse_workers(bad) is None


def test_fleet_record_marks_pd_workers_untested_with_the_reason():
    rec = fleet_record(
        "http://r:1", [RouterWorker("http://a:1"), RouterWorker("http://b:1", "decode")]
    )
    assert [(w["tested"], w["note"]) for w in rec["workers"]] == [(True, None), (False, PD_NOTE)]


def test_changes_name_who_left_joined_or_went_unhealthy():
    before = [RouterWorker("http://a:1", is_healthy=True), RouterWorker("http://b:1")]
    after = [RouterWorker("http://a:1", is_healthy=False), RouterWorker("http://c:1")]
    assert _changes(before, after) == [
        "http://b:1 left the router during the run",
        "http://c:1 joined the router during the run (not checked: run again to include it)",
        "http://a:1: the router marked it unhealthy during the run",
    ]
    assert _changes(before, before) == []
