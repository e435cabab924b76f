"""The fleet reading in words: one golden line per outcome of `readings/fleet` (all identical,
an odd one out with the setting that separates it, one replica, a replica not compared) for the
summary, the `--fleet-require identical` failure and an odd replica's setting contrast; the
fleet's tests assert the reading's figures and that every view renders these functions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kltui.readings.coverage import NotTested, Untested
from kltui.readings.fleet_model import (
    Aside,
    AsideKind,
    Cell,
    Fleet,
    FleetDifference,
    Group,
    OddReplica,
    Shortfall,
    ShortKind,
)
from kltui.words.fleet import (
    aside_words,
    failure_line,
    fleet_json,
    replica_cells,
    setting_contrast,
    shortfall_words,
    summary_line,
)

A, B, C = (f"http://10.0.0.{i}:30000" for i in (1, 2, 3))
SAME = Cell(True, None, 0.0, 0.0, 4, counted=True)
DIFF = Cell(False, None, 0.0, 0.5, 4, counted=True)
AT = FleetDifference("match", 1, 3, "decode", 0.0, 0.5)
DET = "enable_deterministic_inference"


def fleet(**kw) -> Fleet:
    base = Fleet(
        router="http://10.0.0.9:30000",
        workers=[],
        replicas=(A, B),
        helpers=("match",),
        identical=True,
        groups=(Group((A, B), {}),),
        uncompared={},
        settings_differ={},
        odd=(),
        matrices={"match": [[None, SAME], [SAME, None]]},
        grouped_on=("match",),
        require="identical",
    )
    return replace(base, **kw)


ODD = OddReplica(C, 1, A, {DET: (True, False)}, AT, majority=True)
SPLIT = fleet(
    replicas=(A, B, C),
    identical=False,
    groups=(Group((A, B), {DET: True}), Group((C,), {DET: False})),
    settings_differ={DET: [True, False]},
    odd=(ODD,),
    matrices={"match": [[None, SAME, DIFF], [SAME, None, DIFF], [DIFF, DIFF, None]]},
)


def test_all_identical():
    f = fleet()
    assert summary_line(f) == "all 2 replicas bit-identical on every path (match)"
    assert failure_line(f) is None
    assert replica_cells(f) == {A: {"match": "reference"}, B: {"match": "same"}}


def test_odd_one_out_with_the_setting_that_separates_it():
    assert setting_contrast(ODD) == f"{DET} false here, true in the largest group"
    assert summary_line(SPLIT) == (
        f"2 agreement groups among 3 replicas: [{A}, {B}] ({DET} true) vs [{C}] ({DET} false); "
        f"settings that differ between groups: {DET}; odd one out: {C} ({DET} false here, "
        f"true in the largest group), first differs from {A} at match sample 1 @ 3 (decode "
        "side; max |Δ| prefill 0, decode 0.5)"
    )
    assert failure_line(SPLIT) == (
        f"replicas differ: 2 groups; odd one out {C}, first difference from {A} at match "
        "sample 1 @ 3 (decode side; max |Δ| prefill 0, decode 0.5)"
    )
    assert replica_cells(SPLIT)[C] == {"match": "differs"}


def test_one_replica_is_inconclusive():
    f = fleet(replicas=(A,), identical=None, groups=(), matrices={"match": [[None]]})
    assert summary_line(f) == "1 replica checked: none to compare it with"
    assert failure_line(f) == "inconclusive: 1 replica(s) checked, none to compare"


def test_a_replica_not_compared_is_inconclusive():
    f = fleet(
        replicas=(A, B, C),
        identical=None,
        uncompared={C: Aside(AsideKind.ERRORED, message="connection refused")},
        matrices={"match": [[None, SAME, None], [SAME, None, None], [None, None, None]]},
    )
    assert failure_line(f) == f"inconclusive: not compared: {C} (connection refused)"
    assert summary_line(f) == (
        f"3 replicas: [{A}, {B}] bit-identical on every path (match); not compared: {C}"
    )
    assert replica_cells(f)[C] == {"match": "not compared"}


def test_a_large_group_is_shown_by_its_size_and_more_than_three_odd_replicas_are_counted():
    urls = tuple(f"http://10.0.0.{i}:30000" for i in range(1, 11))
    odd = tuple(OddReplica(u, 1, urls[0], {DET: (True, False)}, AT, True) for u in urls[5:])
    f = fleet(
        replicas=urls,
        identical=False,
        groups=(Group(urls[:5], {DET: True}), Group(urls[5:], {DET: False})),
        settings_differ={DET: [True, False]},
        odd=odd,
    )
    head = f"2 agreement groups among 10 replicas: [5 replicas: {', '.join(urls[:3])}, …] ({DET} "
    assert summary_line(f).startswith(head + "true) vs [5 replicas: ")
    at = "match sample 1 @ 3 (decode side; max |Δ| prefill 0, decode 0.5)"
    named = "; ".join(
        f"odd one out {u}, first difference from {urls[0]} at {at}" for u in urls[5:8]
    )
    assert failure_line(f) == (
        f"replicas differ: 2 groups; {named}; + 2 more outside group 1 (fleet.odd)"
    )


NOT_TESTED = Untested(NotTested.FEW_SCORED, 1, 8, need=4)
SHORTFALLS = (
    (Shortfall(ShortKind.ERRORED, "flush"), "errored (phase flush)"),
    (Shortfall(ShortKind.AFTER_ERROR), "not run: the replica errored before it"),
    (Shortfall(ShortKind.NOT_RUN_YET), "has not run yet"),
    (Shortfall(ShortKind.DID_NOT_RUN), "did not run"),
    (Shortfall(ShortKind.STILL_RUNNING), "still running"),
    (Shortfall(ShortKind.DID_NOT_FINISH), "did not finish"),
    (
        Shortfall(ShortKind.NOT_TESTED, untested=NOT_TESTED),
        "only 1 of 8 samples scored (at least 4 needed to count as a test of its path)",
    ),
)


@pytest.mark.parametrize("short, line", SHORTFALLS)
def test_each_shortfall_in_words(short: Shortfall, line: str):
    assert shortfall_words(short) == line


def test_an_errored_helper_without_a_phase_names_none():
    assert shortfall_words(Shortfall(ShortKind.ERRORED)) == "errored"
    assert {s.kind for s, _ in SHORTFALLS} == set(ShortKind)


SHORT = (
    ("prefill_cache_hit", Shortfall(ShortKind.ERRORED, "flush")),
    ("decode_cache_hit", Shortfall(ShortKind.AFTER_ERROR)),
)
ASIDES = (
    (Aside(AsideKind.ERRORED, message="connection refused"), "connection refused"),
    (Aside(AsideKind.NOTHING_SCORED), "no helper scored a sample on it"),
    (Aside(AsideKind.NO_OTHER), "no other replica to compare with"),
    (
        Aside(AsideKind.SHORT, short=SHORT),
        "prefill_cache_hit: errored (phase flush); decode_cache_hit: not run: the replica "
        "errored before it",
    ),
    (
        Aside(AsideKind.TOO_FEW, helper="decode_cache_hit", common=0, need=4, other=B),
        f"decode_cache_hit: 0 samples in common with {B} (at least 4 needed)",
    ),
    (Aside(AsideKind.NOT_COMPARED, other=B), f"not compared with {B}"),
    (
        Aside(AsideKind.BOTH, other=A, third=B),
        f"bit-identical to {A} and to {B}, which differ from each other on samples it did not "
        "share: it fits no group",
    ),
    (
        Aside(AsideKind.SPLIT, other=A, third=B),
        f"bit-identical to {A} but not to {B} of the same group, on other samples: it fits no "
        "group",
    ),
)


@pytest.mark.parametrize("aside, line", ASIDES)
def test_each_aside_in_words(aside: Aside, line: str):
    assert aside_words(aside) == line


def test_every_aside_kind_has_its_golden_line_and_the_json_carries_both():
    assert {a.kind for a, _ in ASIDES} == set(AsideKind)
    f = fleet(uncompared={C: ASIDES[0][0]}, not_fully_compared={B: ASIDES[5][0]})
    js = fleet_json(f)
    assert js["uncompared"] == {C: "connection refused"} and js["uncompared_kind"] == {C: "errored"}
    assert js["not_fully_compared"] == {B: f"not compared with {B}"}
    assert js["not_fully_compared_kind"] == {B: "not compared"}


def test_a_split_no_setting_follows_and_one_replica_per_group():
    unexplained = replace(SPLIT, groups=(Group((A, B), {}), Group((C,), {})), settings_differ={})
    assert summary_line(unexplained).startswith(
        f"2 agreement groups among 3 replicas: [{A}, {B}] vs [{C}]; no reported setting "
        "explains it; odd one out"
    )
    pair = fleet(
        identical=False,
        groups=(Group((A,), {"page_size": 1}), Group((B,), {"page_size": 4})),
        settings_differ={"page_size": [1, 4]},
        matrices={"match": [[None, DIFF], [DIFF, None]]},
    )
    assert summary_line(pair) == (
        f"2 agreement groups among 2 replicas: [{A}] (page_size 1) vs [{B}] (page_size 4); "
        "settings that differ between groups: page_size (one replica per group: anything that "
        "differs between the replicas coincides with the split, so it is not shown to explain it)"
    )


def test_a_replica_not_compared_on_every_path_is_inconclusive():
    f = fleet(
        replicas=(A, B, C),
        helpers=("match", "decode_cache_hit"),
        grouped_on=("match",),
        identical=None,
        not_fully_compared={C: ASIDES[5][0]},
        matrices={
            "match": [[None, SAME, SAME], [SAME, None, SAME], [SAME, SAME, None]],
            "decode_cache_hit": [[None, SAME, None], [SAME, None, None], [None, None, None]],
        },
        groups=(Group((A, B), {}),),
    )
    assert failure_line(f) == (
        f"inconclusive: not compared on every path: {C} (not compared with {B})"
    )
    assert summary_line(f) == (
        f"3 replicas: [{A}, {B}] bit-identical on match only; not fully compared: {C} (not "
        f"compared with {B})"
    )
