import math

import numpy as np
import pytest

from kltui.metrics.k3 import (
    ScoreBook,
    avg_kl_div,
    bootstrap_interval,
    k1,
    k2,
    k3,
    sample_metrics,
    sglang_avg_kl_div,
)


def test_k3_zero_exactly_when_logprobs_equal():
    a = np.array([-1.5, -0.25, -7.0])
    assert k3(a, a.copy()).tolist() == [0.0, 0.0, 0.0]


def test_k3_hand_computed():
    # r = 0.1: exp(0.1) - 1 - 0.1 = 0.005170918075647624
    out = k3(np.array([-1.0]), np.array([-1.1]))
    assert out[0] == pytest.approx(math.exp(0.1) - 1 - 0.1, rel=1e-12)
    # r = -0.5: exp(-0.5) - 1 + 0.5
    out = k3(np.array([-2.5]), np.array([-2.0]))
    assert out[0] == pytest.approx(math.exp(-0.5) - 0.5, rel=1e-12)


def test_k3_is_nonnegative_for_random_pairs():
    rng = np.random.default_rng(1)
    a, b = -rng.random(10_000) * 10, -rng.random(10_000) * 10
    assert (k3(a, b) >= 0).all()


def test_k3_with_infinities():
    inf = math.inf
    out = k3(np.array([-inf, -inf, -1.0]), np.array([-inf, -1.0, -inf]))
    assert out[0] == 0.0  # both -inf: bitwise equal
    assert out[1] == inf  # r = -inf -> exp(r) - 1 - r = +inf
    assert out[2] == inf  # r = +inf -> limit is +inf, not IEEE's nan


def test_k3_nan_propagates():
    out = k3(np.array([np.nan, -1.0]), np.array([-1.0, -1.0]))
    assert math.isnan(out[0]) and out[1] == 0.0


def test_k1_k2():
    assert k1(np.array([-1.0]), np.array([-1.5]))[0] == pytest.approx(-0.5)
    assert k2(np.array([-1.0]), np.array([-1.5]))[0] == pytest.approx(0.125)


def test_avg_kl_div_equals_sglang_formula_bit_for_bit():
    rng = np.random.default_rng(7)
    inputs, outputs = [], []
    for n in rng.integers(5, 300, size=40):
        b = -rng.random(n) * 8
        a = b + rng.normal(0, 1e-3, n)
        inputs.append(a.tolist())
        outputs.append(b.tolist())
    kl_divs, expected = sglang_avg_kl_div(inputs, outputs)
    book = ScoreBook()
    for i, (a, b) in enumerate(zip(inputs, outputs, strict=True)):
        book.add(i, np.arange(len(a)), np.array(a), np.array(b))
    means = [book.samples[i].metrics.mean_k3 for i in range(len(inputs))]
    assert means == [float(x) for x in kl_divs]
    assert avg_kl_div(means) == expected  # exact equality, not approx


def test_avg_is_mean_over_samples_not_tokens():
    book = ScoreBook()
    book.add(0, np.arange(1), np.array([-1.0]), np.array([-1.1]))  # one large token
    book.add(1, np.arange(3), np.zeros(3) - 1, np.zeros(3) - 1)  # three exact tokens
    s = book.summary(n_samples=2, n_skipped=0, threshold=1.0)
    one = math.exp(0.1) - 1.1
    assert s["avg_kl_div"] == pytest.approx(one / 2)
    assert s["token_mean_k3"] == pytest.approx(one / 4)


def test_sample_metrics_positions_and_tail():
    a = np.array([-1.0, -1.0, -1.0, -1.0, -1.0])
    b = np.array([-1.0, -1.0 + 1e-12, -1.0, -1.3, -1.0])
    kl = k3(a, b)
    m = sample_metrics(kl, a, b, tau=1e-3)
    assert m.first_divergence == 1
    assert m.first_above_tail == 3
    assert m.n_nonzero == 2
    assert m.n_tail == 1 and m.tail_fraction == pytest.approx(0.2)
    assert m.argmax_k3 == 3 and m.max_k3 == pytest.approx(kl[3])


def test_summary_fields_and_pass_rule():
    book = ScoreBook(tail_threshold=1e-3)
    for i in range(4):
        a = np.full(10, -2.0)
        b = a.copy()
        b[5] -= 0.05 * (i + 1)
        book.add(i, np.arange(10), a, b, cached_tokens=3, prompt_len=20)
    s = book.summary(n_samples=5, n_skipped=1, threshold=1e-2)
    assert s["scored"] == 4 and s["skipped"] == 1
    assert s["max_k3_sample"] == 3 and s["max_k3_position"] == 5
    assert s["first_divergence"] == {"sample": 0, "position": 5}
    assert s["samples_with_difference"] == 4
    assert s["low_sample_warning"] is True
    assert s["passed"] is (s["avg_kl_div"] < 1e-2)
    lo, hi = s["bootstrap_95"]
    assert lo <= s["avg_kl_div"] <= hi
    assert [p["index"] for p in s["per_sample"]] == [0, 1, 2, 3]


def test_summary_fails_when_avg_is_nan():
    book = ScoreBook()
    book.add(0, np.arange(2), np.array([np.nan, -1.0]), np.array([-1.0, -1.0]))
    s = book.summary(n_samples=1, n_skipped=0, threshold=1.0)
    assert s["passed"] is False and s["non_finite_tokens"] == 1


def test_bootstrap_is_seeded_and_brackets_constant():
    x = np.array([0.1, 0.2, 0.3, 0.4])
    assert bootstrap_interval(x) == bootstrap_interval(x)
    assert bootstrap_interval(np.full(5, 0.5)) == (0.5, 0.5)
