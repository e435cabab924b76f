"""The multiturn reading (readings/multiturn.py) on hand-made events: which turns diverge, the
hit kinds, the remainder test's kinds, the per-turn averages; and the kit's ids and hit rules."""

from __future__ import annotations

import random

import numpy as np

from kltui.helpers.multiturn_plan import (
    MultiturnShape,
    build_plan,
    interleave_order,
    random_suffixes,
    where,
)
from kltui.metrics.turn_hits import HitExpectation, HitRule, decode_dense, prefill_exact
from kltui.readings.multiturn import HitKind, RemainderKind, read_multiturn
from kltui.session.events import HelperStarted, SampleScored
from kltui.session.store import SessionStore

SHAPE = MultiturnShape(groups=1, branches=2, turn_suffixes=(8,))  # 2 conversations x 2 turns


def scored(sample: int, diff: float, cached: int, history: int, e: HitExpectation) -> SampleScored:
    g, b, t = where(SHAPE, sample)
    lp = np.array([-1.0, -2.0, -0.5])
    return SampleScored(
        "multiturn", "s", sample, np.array([5, 6, 7]), lp + np.array([0, diff, diff]), lp,
        cached, history, group=g, branch=b, turn=t, hit_expected=e.to_dict(),
    )  # fmt: skip


def state(events: list[SampleScored], threshold: float = 1e-9):
    store = SessionStore()
    store.apply(HelperStarted("multiturn", "s", len(events), threshold, 1e-3))
    for ev in events:
        store.apply(ev)
    return store.helpers["multiturn@s"]


def test_the_kits_ids_order_and_rules():
    shape = MultiturnShape()
    plan = build_plan(shape, [list(range(600))] * 3, vocab=151936)
    rng = random.Random(456)  # the kit's branch suffixes, id for id, under a large vocabulary
    assert plan.firsts[0][512:] == [rng.randint(1, 30000) for _ in range(256)]
    assert [len(f) for f in plan.firsts[:3]] == [768, 832, 896]
    assert plan.turn_suffixes[0] == random_suffixes(9, 512, 789, 30000)
    assert interleave_order(9, 3) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    small = build_plan(shape, [list(range(600))] * 3, vocab=1024)
    assert small.max_id == 1023 and max(max(s) for s in small.turn_suffixes[1]) <= 1023
    assert prefill_exact(512).allowed == (512,)
    assert decode_dense(100, 20, 16).allowed == (112, 119, 120)
    assert decode_dense(100, 20, 1).allowed == (119, 120)


def test_divergent_turns_and_a_separating_remainder():
    exp = decode_dense(100, 20, 4)
    st = state(
        [
            scored(0, 0.0, 64, 80, prefill_exact(64)),
            scored(1, 0.3, 116, 128, exp),  # diverges, hit 116: 116 % 8 == 4
            scored(2, 0.0, 64, 84, prefill_exact(64)),
            scored(3, 0.0, 120, 136, exp),  # clean, hit 120: 120 % 8 == 0
        ]
    )
    m = read_multiturn(st, page_size=4)
    assert m is not None
    assert [(r.place.label, r.place.turn) for r in m.divergent] == [("g0b0", 1)]
    assert m.divergent[0].first_divergence == 1
    assert {r.hit for r in m.rows} == {HitKind.AS_ASSERTED}  # 116 = floor(119 / 4) * 4
    assert m.remainders.kind is RemainderKind.SEPARATES
    first = m.remainders.found[0]
    assert (first.quantity, first.modulus, first.divergent, first.clean) == (
        "cached_tokens", 8, (4,), (0,)
    )  # fmt: skip
    assert m.turn_avg[0] == 0.0 and m.last_turn_avg == m.turn_avg[1] > 0


def test_remainder_kinds_and_short_hits():
    exp = HitExpectation(HitRule.DECODE_DENSE, (119, 120))
    clean = state([scored(0, 0.0, 64, 80, prefill_exact(64)), scored(1, 0.0, 119, 128, exp)])
    m = read_multiturn(clean)
    assert m is not None and m.remainders.kind is RemainderKind.NO_DIVERGENCE
    short = state([scored(0, 0.0, 60, 80, prefill_exact(64)), scored(1, 0.2, 119, 128, exp)])
    m = read_multiturn(short)
    assert m is not None and [r.hit for r in m.short] == [HitKind.SHORT]
    assert m.remainders.kind is RemainderKind.ALL_DIVERGENT  # turn 1's only turn diverges
    shared = state(
        [scored(1, 0.2, 119, 128, exp), scored(3, 0.0, 119, 128, exp)]
    )  # same hit and history, one diverges: nothing separates
    m = read_multiturn(shared)
    assert m is not None and m.remainders.kind is RemainderKind.SHARED


def test_a_recorded_expectation_is_read_back_untrusted():
    e = decode_dense(10, 5, 4)
    assert HitExpectation.of(e.to_dict()) == e
    for bad in (None, {"rule": "x"}, {"rule": "decode_dense", "allowed": ["1"]}, [1]):
        assert HitExpectation.of(bad) is None
