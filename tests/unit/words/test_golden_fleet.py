"""The fleet reading in words: one golden line per outcome of `readings/fleet` (all identical,
an odd one out with the setting that separates it, one replica, a replica not compared) for the
summary, the `--fleet-require identical` failure and an odd replica's setting contrast; the
fleet's tests assert the reading's figures and that every view renders these functions."""

from __future__ import annotations

from dataclasses import replace

from kltui.readings.fleet_model import Cell, Fleet, FleetDifference, Group, OddReplica
from kltui.words.fleet import failure_line, replica_cells, setting_contrast, summary_line

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
        uncompared={C: "connection refused"},
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
