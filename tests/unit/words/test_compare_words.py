"""The words of a bitwise comparison: one golden line per `DiffSide` and per `NotComparable`,
and a re-run's line; the readings' tests (tests/unit/readings/test_compare.py,
test_rerun_replaced.py) assert the kinds."""

from __future__ import annotations

import pytest

from kltui.readings.compare import (
    BookDiff,
    DiffSide,
    FirstDifference,
    NotComparable,
    RerunChain,
    RerunEquality,
    SampleDiff,
    rerun_equality,
)
from kltui.session.store import SessionStore
from kltui.words.compare import first_difference, first_difference_of, rerun, rerun_reason
from tests.reports.synth import URL, HelperSpec, run_events, server


def differ(side: DiffSide) -> SampleDiff:
    ids = 3 if side is DiffSide.IDS else None
    a = 3 if side in (DiffSide.PREFILL, DiffSide.BOTH) else None
    b = 3 if side in (DiffSide.DECODE, DiffSide.BOTH) else None
    n = 3 if side is DiffSide.LENGTH else 8
    return SampleDiff(1, 8, n, ids, a, b, 2.5e-3, 1e-7)


@pytest.mark.parametrize(
    "side, what",
    [
        (DiffSide.IDS, "generated token ids differ"),
        (DiffSide.PREFILL, "prefill side"),
        (DiffSide.DECODE, "decode side"),
        (DiffSide.BOTH, "prefill and decode side"),
        (DiffSide.LENGTH, "one side has fewer tokens"),
    ],
)
def test_each_side_in_words(side: DiffSide, what: str):
    diff = BookDiff([differ(side)])
    assert diff.first is not None and diff.first.side is side
    assert first_difference(diff) == (
        f"differs at sample 1 @ 3 ({what}; max |Δ| prefill 0.0025, decode 1e-07)"
    )


def test_identical_and_empty_comparisons():
    assert first_difference(BookDiff([SampleDiff(0, 8, 8, None, None, None, 0.0, 0.0)])) == (
        "bit-identical"
    )
    assert first_difference_of(BookDiff().to_dict()) == "nothing to compare"


def store_of(events) -> SessionStore:
    st = SessionStore()
    for ev in events:
        st.apply(ev)
    return st


@pytest.mark.parametrize(
    "eq, reason",
    [
        (RerunEquality(None, NotComparable.HELPERS), "the runs hold different helpers"),
        (RerunEquality(None, NotComparable.NO_HELPER), "no helper ran"),
        (
            RerunEquality(None, NotComparable.SAMPLES, helper=f"match@{URL}"),
            f"match@{URL}: the runs scored different samples",
        ),
        (RerunEquality(True), None),
    ],
)
def test_each_reason_a_rerun_is_not_comparable(eq: RerunEquality, reason: str | None):
    assert rerun_reason(eq) == reason
    assert eq.to_json(reason)["reason"] == reason
    if reason is not None:
        assert rerun(eq) == f"not comparable ({reason})"


def test_a_replaced_server_is_its_own_reason():
    specs = [HelperSpec("match")]
    prev = store_of(run_events(specs, servers=[server(random_seed=1)]))
    cur = store_of(
        run_events(
            specs,
            servers=[server(startup_time=2.0, random_seed=7, enable_deterministic_inference=True)],
        )
    )
    eq = rerun_equality(prev, cur, run=2)
    assert rerun_reason(eq) == (
        f"server {URL} replaced between run 1 and 2 (startup_time 1.0 → 2.0, random_seed 1 → 7, "
        "enable_deterministic_inference false → true): not comparable as run-to-run "
        "non-determinism"
    )
    assert rerun(eq) == rerun_reason(eq)
    unnumbered = rerun_equality(prev, cur)
    assert (rerun_reason(unnumbered) or "").startswith(
        f"server {URL} replaced between the previous run and this one ("
    )


def test_a_changed_value_object_is_named_without_its_values():
    def run(t: float):
        return store_of(run_events([HelperSpec("match")], servers=[server(startup_time={"s": t})]))

    chain = RerunChain()
    chain.add(run(1.5))
    chain.add(run(2.5))
    third = chain.add(run(3.5))
    assert third is not None and rerun_reason(third) == (
        f"server {URL} replaced between run 2 and 3 (startup_time changed): not comparable "
        "as run-to-run non-determinism"
    )


def test_a_rerun_in_words():
    assert rerun(RerunEquality(True)) == "bit-identical (every token id and logprob)"
    assert rerun(RerunEquality(False)) == "differs"
    where = FirstDifference("match", URL, 1, 3, DiffSide.PREFILL)
    eq = RerunEquality(False, None, where, {f"match@{URL}": BookDiff([differ(DiffSide.PREFILL)])})
    assert rerun(eq) == (
        "match differs at sample 1 @ 3 (prefill side; max |Δ| prefill 0.0025, decode 1e-07)"
    )
