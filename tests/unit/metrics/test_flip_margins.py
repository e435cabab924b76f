"""Flip margins (issue 30): at every top-1 disagreement, both engines' top-1/top-2 margin. A flip
near a tie is rounding; a flip where either engine was sure is not."""

from __future__ import annotations

import numpy as np
import pytest

from kltui.metrics.cross import (
    FLIP_MARGIN_LINE,
    Side,
    cross_positions,
    cross_summary,
    flip_summary,
    top_margins,
)


def _side(ids, top_ids, top_lp) -> Side:
    ids = np.asarray(ids, dtype=np.int64)
    top_ids = np.asarray(top_ids, dtype=np.int64)
    top_lp = np.asarray(top_lp, dtype=np.float64)
    lp = np.array([top_lp[i, list(top_ids[i]).index(t)] if t in top_ids[i] else -9.0
                   for i, t in enumerate(ids)])  # fmt: skip
    return Side(ids, lp, top_ids, top_lp)


IDS = [1, 2, 3, 4]
# position 0: agree; 1: a near tie flipped (0.05 / 0.02 nats); 2: SGLang sure (2 nats) of 7,
# vLLM of 3 by 0.1: a wide flip; 3: agree
TOP_A = [[1, 2], [5, 2], [7, 3], [4, 1]]
LP_A = np.log([[0.6, 0.2], [0.41, 0.39], [0.8, 0.108], [0.5, 0.3]])
TOP_B = [[1, 2], [2, 5], [3, 7], [4, 1]]
LP_B = np.log([[0.6, 0.2], [0.4, 0.392], [0.5, 0.4524], [0.5, 0.3]])


def test_top_margins():
    m = top_margins(np.array([[-0.1, -0.8], [-0.5, -np.inf], [-1.0, -1.0]]))
    assert m[0] == pytest.approx(0.7) and np.isnan(m[1]) and m[2] == 0.0
    assert np.isnan(top_margins(np.zeros((3, 1)))).all()


def test_margins_at_every_flip_and_the_wide_one_is_counted():
    c = cross_positions(_side(IDS, TOP_A, LP_A), _side(IDS, TOP_B, LP_B))
    assert c.flip.tolist() == [False, True, True, False]
    assert c.margin_a[2] == pytest.approx(np.log(0.8 / 0.108))
    fm = flip_summary([(0, c)])
    assert (fm.flips, fm.within_line, fm.across_line) == (2, 1, 1)
    assert fm.line == FLIP_MARGIN_LINE == 0.7
    big = fm.largest
    assert big is not None and big.margin_b is not None
    assert (big.sample, big.position, big.id_a, big.id_b) == (0, 2, 7, 3)
    assert big.margin_a == pytest.approx(np.log(0.8 / 0.108)) and big.margin_b < 0.7
    assert fm.max_margin == pytest.approx(np.log(0.8 / 0.108))
    # widest first
    assert [f.position for f in fm.listed] == [2, 1]


def test_summary_locates_flips_across_samples_and_none_when_all_agree():
    c = cross_positions(_side(IDS, TOP_A, LP_A), _side(IDS, TOP_B, LP_B))
    same = cross_positions(_side(IDS, TOP_A, LP_A), _side(IDS, TOP_A, LP_A))
    fm = cross_summary([(3, same), (9, c)], k=2).flip_margins
    assert fm.flips == 2 and fm.largest is not None and fm.largest.sample == 9
    none = cross_summary([(3, same)], k=2).flip_margins
    assert none.flips == 0 and none.largest is None and none.listed == ()


def test_a_flip_without_a_second_token_has_an_unknown_margin():
    a = _side([1], [[5]], [[-0.1]])
    b = _side([1], [[6]], [[-0.1]])
    fm = flip_summary([(0, cross_positions(a, b))])
    assert fm.flips == 1 and fm.margin_unknown == 1
    assert fm.within_line == fm.across_line == 0 and fm.max_margin is None


def test_vectorized_on_a_long_sample():
    rng = np.random.default_rng(0)
    p, k = 20000, 5
    lp = np.sort(np.log(rng.dirichlet(np.ones(50), size=p))[:, :k], axis=1)[:, ::-1]
    ids_a = np.tile(np.arange(k), (p, 1))
    ids_b = ids_a.copy()
    swap = rng.random(p) < 0.1
    ids_b[swap, 0], ids_b[swap, 1] = ids_a[swap, 1], ids_a[swap, 0]
    tok = ids_a[:, 0]
    a = Side(tok, lp[:, 0], ids_a, lp)
    b = Side(tok, lp[:, 0], ids_b, lp)
    fm = flip_summary([(0, cross_positions(a, b))])
    assert fm.flips == int(swap.sum())
    margins = (lp[:, 0] - lp[:, 1])[swap]
    assert fm.across_line == int((margins >= 0.7).sum())
    assert fm.max_margin == pytest.approx(margins.max())
