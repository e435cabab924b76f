"""Cross-engine metrics: hand-computed cases for union KL, overlaps and vLLM's greedy rule."""

from __future__ import annotations

import numpy as np
import pytest

from kltui.metrics.cross import (
    REST_FLOOR,
    Side,
    cross_positions,
    cross_summary,
    first_token_mismatch,
    lookup,
)
from kltui.metrics.cross_figures import At, FirstMismatch, GreedyMismatch
from kltui.metrics.k3 import k3


def _side(dist: np.ndarray, tokens: np.ndarray, k: int, extra: np.ndarray | None = None) -> Side:
    """A side built from full distributions [P, V]: the engine reports its top-k and, if asked,
    the logprobs of `extra` ids at every position."""
    lp = np.log(dist)
    order = np.argsort(-lp, axis=1, kind="stable")[:, :k]
    rows = np.arange(dist.shape[0])[:, None]
    side = Side(
        token_ids=tokens,
        lp=lp[np.arange(tokens.size), tokens],
        top_ids=order.astype(np.int64),
        top_lp=lp[rows, order],
    )
    if extra is not None:
        side.extra_ids = np.sort(extra)
        side.extra_lp = lp[:, side.extra_ids]
    return side


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sum(p * (np.log(p) - np.log(q))))


P = np.array([[0.5, 0.3, 0.1, 0.06, 0.04], [0.05, 0.05, 0.1, 0.2, 0.6]])  # SGLang
Q = np.array([[0.45, 0.35, 0.08, 0.07, 0.05], [0.06, 0.04, 0.1, 0.25, 0.55]])  # vLLM
TOKENS = np.array([1, 4])


def test_identical_engines_score_zero_everywhere():
    a = _side(P, TOKENS, 3)
    b = _side(P, TOKENS, 3, extra=np.arange(5))
    c = cross_positions(a, b)
    assert (c.abs_delta == 0).all() and (c.k3 == 0).all()
    assert c.top1_agree.all() and (c.topk_overlap == 1).all()
    assert np.allclose(c.union_kl, 0, atol=1e-15)


def test_whole_vocabulary_known_gives_the_exact_kl():
    # top-k = the vocabulary: the union KL is the full KL(vLLM || SGLang), computed by hand
    a = _side(P, TOKENS, 5)
    b = _side(Q, TOKENS, 5)
    c = cross_positions(a, b)
    for i in range(2):
        assert c.union_kl[i] == pytest.approx(_kl(Q[i], P[i]), rel=1e-12)
    assert np.allclose(c.abs_delta, np.abs(np.log(P[[0, 1], TOKENS]) - np.log(Q[[0, 1], TOKENS])))
    assert np.array_equal(c.k3, k3(a.lp, b.lp))


def test_remainder_mass_is_one_other_bucket():
    # top-2 each; SGLang is asked for vLLM's top-2 ids (token_ids_logprob). Position 0: both
    # rank ids 0, 1 first, so the kept set is {0, 1} plus the actual token 1 -> {0, 1}.
    a = _side(P, TOKENS, 2, extra=np.array([0, 1, 3, 4]))
    b = _side(Q, TOKENS, 2)
    c = cross_positions(a, b)
    keep = [0, 1]
    p0 = np.append(P[0, keep], 1 - P[0, keep].sum())
    q0 = np.append(Q[0, keep], 1 - Q[0, keep].sum())
    assert c.union_kl[0] == pytest.approx(_kl(q0, p0), rel=1e-12)
    assert c.union_known[0] == 2 and c.union_size[0] == 2
    # coarse-graining never exceeds the full KL (data-processing inequality)
    assert c.union_kl[0] <= _kl(Q[0], P[0])


def test_an_id_only_sglang_ranks_is_folded_into_other():
    # Position 1: SGLang's top-2 is {4, 3}; vLLM's top-2 is {4, 3} too; shift vLLM so that its
    # top-2 is {4, 2} and id 3 (SGLang's) has no vLLM value.
    q = Q.copy()
    q[1] = [0.06, 0.04, 0.3, 0.05, 0.55]
    a = _side(P, TOKENS, 2, extra=np.array([2, 4]))
    b = _side(q, TOKENS, 2)
    c = cross_positions(a, b)
    keep = [2, 4]  # id 3 is in SGLang's top-2 but vLLM did not report it
    p1 = np.append(P[1, keep], 1 - P[1, keep].sum())
    q1 = np.append(q[1, keep], 1 - q[1, keep].sum())
    assert c.union_kl[1] == pytest.approx(_kl(q1, p1), rel=1e-12)
    assert c.union_known[1] == 2 and c.union_size[1] == 3
    assert not c.top1_agree[1] or q[1].argmax() == P[1].argmax()
    assert c.topk_overlap[1] == pytest.approx(0.5)


def test_rounding_cannot_make_an_infinite_kl():
    # float32-style logprobs whose top set sums to just over 1 on one side
    a = Side(np.array([0]), np.array([np.log(0.7) + 1e-7]), np.array([[0, 1]]),
             np.array([[np.log(0.7) + 1e-7, np.log(0.3) + 1e-7]]), np.array([1]),
             np.array([[np.log(0.3) + 1e-7]]))  # fmt: skip
    b = Side(np.array([0]), np.array([np.log(0.7)]), np.array([[0, 1]]),
             np.array([[np.log(0.7), np.log(0.3) - 1e-3]]))  # fmt: skip
    c = cross_positions(a, b)
    assert np.isfinite(c.union_kl).all() and (c.union_kl >= 0).all()
    # SGLang's kept mass exceeds 1 by rounding: its "other" is floored, not zero
    q = np.array([0.7, 0.3 * np.exp(-1e-3)])
    rest_b = 1 - q.sum()
    want = float(np.sum(q * (np.log(q) - (np.log([0.7, 0.3]) + 1e-7))))
    want += rest_b * (np.log(rest_b) - np.log(REST_FLOOR))
    assert c.union_kl[0] == pytest.approx(want, rel=1e-6)


def test_lookup_prefers_the_direct_report_and_knows_what_it_lacks():
    s = Side(
        token_ids=np.array([7]),
        lp=np.array([-0.25]),
        top_ids=np.array([[3, 7]]),
        top_lp=np.array([[-0.1, -0.2500001]]),
        extra_ids=np.array([5, 9]),
        extra_lp=np.array([[-4.0, -6.0]]),
    )
    lp, known = lookup(s, np.array([[7, 3, 9, 11, -1]]))
    assert known.tolist() == [[True, True, True, False, False]]
    assert lp[0, :3].tolist() == [-0.25, -0.1, -6.0]


def test_both_minus_inf_is_agreement():
    a = Side(np.array([2]), np.array([-np.inf]), np.array([[0]]), np.array([[0.0]]))
    b = Side(np.array([2]), np.array([-np.inf]), np.array([[0]]), np.array([[0.0]]))
    c = cross_positions(a, b)
    assert c.abs_delta[0] == 0 and c.k3[0] == 0 and c.top1_agree[0]


def test_sides_must_score_the_same_ids():
    a = _side(P, TOKENS, 2)
    b = _side(Q, np.array([1, 3]), 2)
    with pytest.raises(ValueError, match="different token ids"):
        cross_positions(a, b)


def test_top5_overlap_needs_five():
    rng = np.random.default_rng(0)
    d = rng.dirichlet(np.ones(40), size=6)
    e = rng.dirichlet(np.ones(40), size=6)
    t = np.zeros(6, dtype=np.int64)
    c = cross_positions(_side(d, t, 8), _side(e, t, 8))
    assert c.top5_overlap is not None
    top5_a = np.argsort(-d, axis=1)[:, :5]
    top5_b = np.argsort(-e, axis=1)[:, :5]
    want = [len(set(x) & set(y)) / 5 for x, y in zip(top5_a, top5_b, strict=True)]
    assert c.top5_overlap.tolist() == pytest.approx(want)
    assert cross_positions(_side(d, t, 3), _side(e, t, 3)).top5_overlap is None


# --------------------------------------------------------------------------- vLLM's greedy rule


def test_identical_greedy_generations_have_no_mismatch():
    ids = np.array([4, 5, 6])
    top = np.array([[4, 1], [5, 2], [6, 3]])
    assert first_token_mismatch(ids, ids, top, top) is None


def test_mismatch_with_cross_containment_passes():
    a, b = np.array([4, 5, 6, 7]), np.array([4, 9, 8, 8])
    top_a = np.array([[4, 1], [5, 9], [6, 0], [7, 0]])
    top_b = np.array([[4, 1], [9, 5], [8, 0], [8, 0]])
    m = first_token_mismatch(a, b, top_a, top_b)
    assert m == GreedyMismatch(1, 5, 9, a_in_top_b=True, b_in_top_a=True, passed=True)


def test_mismatch_outside_the_other_top_k_fails():
    a, b = np.array([4, 5]), np.array([4, 9])
    top_a = np.array([[4, 1], [5, 2]])  # 9 is not in SGLang's top-2 at step 1
    top_b = np.array([[4, 1], [9, 5]])
    m = first_token_mismatch(a, b, top_a, top_b)
    assert m is not None and m.position == 1 and m.a_in_top_b and not m.b_in_top_a
    assert not m.passed


def test_shorter_generation_is_compared_on_the_common_prefix():
    m = first_token_mismatch(
        np.array([1, 2]), np.array([1, 2, 3]), np.zeros((2, 1)), np.zeros((3, 1))
    )
    assert m is None


# --------------------------------------------------------------------------------- the summary


def test_summary_rates_and_the_95_percent_line():
    t = np.zeros(20, dtype=np.int64)
    agree = np.tile(np.array([[0.9, 0.05, 0.03, 0.01, 0.01]]), (20, 1))
    flip = agree.copy()
    flip[0] = [0.05, 0.9, 0.03, 0.01, 0.01]  # one position of 20 disagrees on top-1
    c1 = cross_positions(_side(agree, t, 5), _side(agree, t, 5))
    c2 = cross_positions(_side(agree, t, 5), _side(flip, t, 5))
    s = cross_summary([(0, c1), (1, c2)], k=5)
    assert s.positions == 40
    assert s.top1_agreement == pytest.approx(39 / 40)
    assert s.top5_agreement == 1.0 and s.topk_overlap == 1.0
    assert s.agreement_ok is True  # 97.5% >= 95%
    assert s.first_top1_disagreement == At(sample=1, position=0)
    assert s.max_abs_delta_at == At(sample=1, position=0)
    assert s.max_abs_delta == pytest.approx(abs(np.log(0.9) - np.log(0.05)))
    s_bad = cross_summary([(1, c2)], k=5, line=0.99)
    assert s_bad.agreement_ok is False


def test_summary_reports_the_earliest_greedy_mismatch_and_rule_failures():
    t = np.zeros(2, dtype=np.int64)
    c = cross_positions(_side(P, t, 2), _side(Q, t, 2))
    fail = GreedyMismatch(3, 1, 2, a_in_top_b=False, b_in_top_a=True, passed=False)
    ok = GreedyMismatch(5, 1, 2, a_in_top_b=True, b_in_top_a=True, passed=True)
    s = cross_summary([(0, c), (1, c), (2, c)], [(0, None), (1, ok), (2, fail)], k=2)
    assert s.greedy_compared == 3 and s.greedy_identical == 1
    assert s.greedy_rule_failures == 1
    assert s.first_token_mismatch == FirstMismatch(2, fail)
    assert s.top5_agreement is None  # K = 2


def test_empty_summary():
    s = cross_summary([], k=5)
    assert s.positions == 0 and s.top1_agreement is None and s.agreement_ok is None


# ------------------------------------------------- SGLang answers as the cross-engine helper reads


def test_sglang_top_lists_become_dense_rows():
    from kltui.helpers.cross_batches import pairs_to_topk

    rows = [None, [(5, -0.1), (7, -2.0), (9, -3.0)], [(2, -0.5)]]
    top = pairs_to_topk(rows, 2, 3)
    assert top.ids.tolist() == [[-1, -1], [5, 7], [2, -1]]
    assert top.lp[1].tolist() == [-0.1, -2.0]


def test_token_ids_rows_must_hold_the_ids_asked_for():
    from kltui.engines.sglang_parse import id_rows
    from kltui.helpers.cross_batches import token_ids_table

    ids = np.array([3, 8])
    # SGLang's entries: [logprob, token id, text]
    rows = id_rows([None, [[-1.0, 3, None], [-2.0, 8, None]], [[-1.5, 3, None], [-0.5, 8, None]]])
    table = token_ids_table(rows, ids, 3, "sample 0")
    assert np.isnan(table[0]).all() and table[1:].tolist() == [[-1.0, -2.0], [-1.5, -0.5]]
    with pytest.raises(ValueError, match="differ from the ids requested"):
        token_ids_table(id_rows([None, [[-1.0, 8, None], [-2.0, 3, None]]]), ids, 2, "sample 0")
    with pytest.raises(ValueError, match="differ from the ids requested"):  # ragged rows
        token_ids_table(id_rows([[[-1.0, 3, None]], [[-1.0, 3], [-2.0, 8]]]), ids, 2, "s")
    with pytest.raises(ValueError, match="rows for 3 positions"):
        token_ids_table(id_rows([None]), ids, 3, "sample 0")
    assert np.isnan(token_ids_table(id_rows([None, None]), ids, 2, "s")).all()


def test_token_ids_rows_parse_in_one_conversion_and_fall_back_on_anything_else():
    from kltui.engines.sglang_parse import ParseError, id_rows, top_entries

    # a null logprob is NaN, as the per-entry parse reads it; text rides along unread
    raw = [None, [[None, 3, "a"], [-2.0, 8, "b"]], [[-1.5, 3, None], [-0.5, 8, None]]]
    got = id_rows(raw)
    assert got.filled.tolist() == [False, True, True]
    assert got.ids.tolist() == [[3, 8], [3, 8]] and got.ids.dtype == np.int64
    assert np.isnan(got.lps[0, 0]) and got.lps[1].tolist() == [-1.5, -0.5]
    # the same numbers as the per-entry parse, on the fast path (no text)
    fast = [None, [[-1.0, 3, None], [-2.0, 8, None]]]
    per = top_entries(fast)
    assert id_rows(fast).lps.tolist() == [[e[1] for e in per[1]]]
    # malformed entries are ParseErrors naming the field, as before
    for bad in ([None, [[-1.0]]], [[[-1.0, None, None]]], [[[-1.0, 2.5, None]]], "x"):
        with pytest.raises(ParseError, match="input_token_ids_logprobs"):
            id_rows(bad)
    assert id_rows(None) is None


def test_requests_are_cut_to_the_entry_budget(monkeypatch):
    from kltui.helpers import cross_batches as cb

    monkeypatch.setattr(cb, "ENTRY_BUDGET", 1000)
    samples = [cb.Sample(i, np.zeros(40, np.int64), np.zeros(10, np.int64)) for i in range(7)]
    chunks = cb.chunks(samples, k=4)  # 50 positions x (1 + 2*4) entries = 450 per sample
    assert [len(c) for c in chunks] == [2, 2, 2, 1]
    assert [s.index for c in chunks for s in c] == list(range(7))
    assert samples[0].start == 40 and samples[0].seq.size == 50
    bare = cb.Sample(0, np.zeros(5, np.int64), np.zeros(0, np.int64))
    assert bare.start == 1  # no continuation: every prompt position after the first
