"""A protocol finding in words: one golden message per kind of `metrics/protocol` (one-sided
NaN/inf, a logprob above 0, a top-k summing above 1, answers nothing verifies) and the helper's
reason built from the first; the metrics' tests assert the kinds, samples and positions."""

from __future__ import annotations

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.metrics.protocol import unverified


def _summary(book: ScoreBook) -> dict:
    return book.summary(n_samples=len(book.order), n_skipped=0, threshold=1.0)


def test_one_sided_non_finite():
    book = ScoreBook(sides=("prefill", "decode"))
    book.add(0, np.arange(4), np.array([-1.0, -1.0, -2.0, -1.0]), np.array([-1, np.nan, -2, -1.1]))
    (f,) = _summary(book)["protocol"]
    assert f["message"] == (
        "NaN/inf logprobs on one side only at 1 position(s) of 1 sample(s): sample 0 position 1 "
        "(sample 0 position 1: prefill -1, decode NaN (null)); the two sides score the same "
        "token, so this is a fault of the answer, not a divergence: those positions are left "
        "out of the k3 figures"
    )


def test_logprob_above_zero():
    book = ScoreBook()
    lp = np.array([-1.0, 10.0, -0.5])
    book.add(0, np.arange(3), lp, lp.copy())
    (f,) = _summary(book)["protocol"]
    assert f["message"] == (
        "logprobs above 0 (impossible: a logprob is log p <= 0) at 1 position(s) of 1 "
        "sample(s): sample 0 position 1 (largest +10); the answers' values are wrong, whatever "
        "k3 says"
    )


def test_top_k_sum_above_one_names_its_side():
    book = ScoreBook(sides=("SGLang", "baseline engine"))
    lp = np.array([-0.1, -0.2])
    good = [[(5, -0.1), (6, -3.0)], [(7, -0.2), (8, -2.5)]]
    bad = [[(5, -0.1), (6, -3.0)], [(7, -0.2), (8, -0.3)]]
    book.add(0, np.array([5, 7]), lp, lp.copy(), top_a=good, top_b=bad)
    (f,) = _summary(book)["protocol"]
    assert f["message"] == (
        "baseline engine top-k probabilities sum above 1 (impossible) at 1 position(s) of 1 "
        "sample(s): sample 0 position 1 (largest sum 1.56)"
    )


def test_unverified_answers():
    assert unverified([1, 2], "a proxy answered its own ids")["message"] == (
        "answers' prompts cannot be verified for 2 sample(s) (1, 2): a proxy answered its own "
        "ids; an answer swapped between prompts would read as a divergence"
    )


def test_the_reason_is_the_first_finding_and_counts_the_others():
    book = ScoreBook(sides=("prefill", "decode"))
    book.add(0, np.arange(3), np.array([-1.0, np.inf, 3.0]), np.array([-1.0, -1.0, 3.0]))
    s = _summary(book)
    assert [f["kind"] for f in s["protocol"]] == ["one-sided-non-finite", "logprob-above-zero"]
    assert s["reason"] == (
        "protocol fault: NaN/inf logprobs on one side only at 1 position(s) of 1 sample(s): "
        "sample 0 position 1 (sample 0 position 1: prefill +inf, decode -1); the two sides "
        "score the same token, so this is a fault of the answer, not a divergence: those "
        "positions are left out of the k3 figures (and 1 more protocol finding(s))"
    )
