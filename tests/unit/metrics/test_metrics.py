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
from kltui.metrics.protocol import topk_over, topk_sums
from kltui.metrics.summary import Summary


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
    # NaN on both sides: a numeric fault of the model on both paths, k3 undefined there
    book = ScoreBook()
    book.add(0, np.arange(2), np.array([np.nan, -1.0]), np.array([np.nan, -1.0]))
    s = book.summary(n_samples=1, n_skipped=0, threshold=1.0)
    assert s["passed"] is False and s["non_finite_tokens"] == 1
    assert s["protocol"] == [] and "status" not in s


def test_bootstrap_is_seeded_and_brackets_constant():
    x = np.array([0.1, 0.2, 0.3, 0.4])
    assert bootstrap_interval(x) == bootstrap_interval(x)
    assert bootstrap_interval(np.full(5, 0.5)) == (0.5, 0.5)


# ---------------------------------------------------------------- protocol findings


def _one(book: ScoreBook) -> dict:
    return book.summary(n_samples=len(book.order), n_skipped=0, threshold=1.0)


def test_one_sided_nan_is_a_protocol_finding_left_out_of_k3():
    book = ScoreBook(sides=("prefill", "decode"))
    a = np.array([-1.0, -1.0, -2.0, -1.0])
    b = np.array([-1.0, np.nan, -2.0, -1.1])
    book.add(0, np.arange(4), a, b)
    book.add(1, np.arange(2), np.array([-0.5, -0.5]), np.array([-0.5, -0.5]))
    s = _one(book)
    (f,) = s["protocol"]
    assert f["kind"] == "one-sided-non-finite"
    assert f["samples"] == [0] and f["positions"] == [[0, 1]] and f["count"] == 1
    assert "sample 0 position 1" in f["message"] and "decode NaN" in f["message"]
    # left out, not inf: the figures are those of positions 0, 2 and 3
    m = book.samples[0].metrics
    expected = float(np.mean(k3(a[[0, 2, 3]], b[[0, 2, 3]])))
    assert m.mean_k3 == expected and m.excluded == 1 and m.non_finite == 0
    assert math.isfinite(s["avg_kl_div"]) and s["max_k3"] == pytest.approx(k3(a, b)[3])
    assert s["max_k3_position"] == 3 and s["tokens"] == 5 and s["non_finite_tokens"] == 0
    assert s["status"] == "invalid" and s["passed"] is False
    assert s["reason"] == f"protocol fault: {f['message']}"  # words: tests/unit/words


@pytest.mark.parametrize("bad", [np.inf, -np.inf, -9999.0])
def test_one_sided_inf_and_sentinel_are_protocol_findings(bad):
    book = ScoreBook()
    book.add(0, np.arange(3), np.array([-1.0, bad, -1.0]), np.array([-1.0, -1.0, -1.0]))
    s = _one(book)
    assert [f["kind"] for f in s["protocol"]] == ["one-sided-non-finite"]
    assert s["avg_kl_div"] == 0.0 and s["max_k3"] == 0.0  # not inf
    assert s["status"] == "invalid"


def test_logprob_above_zero_is_a_protocol_finding_even_when_bit_identical():
    book = ScoreBook()
    lp = np.array([-1.0, 10.0, -0.5])
    book.add(0, np.arange(3), lp, lp.copy())
    s = _one(book)
    assert s["avg_kl_div"] == 0.0 and s["samples_with_difference"] == 0
    (f,) = s["protocol"]
    assert f["kind"] == "logprob-above-zero" and f["positions"] == [[0, 1]]
    assert "largest +10" in f["message"]
    assert s["status"] == "invalid" and s["passed"] is False


def test_rounding_above_zero_is_not_a_finding():
    book = ScoreBook()
    lp = np.array([-1.0, 1e-7, 0.0])
    book.add(0, np.arange(3), lp, lp.copy())
    s = _one(book)
    assert s["protocol"] == [] and s["passed"] is True and "status" not in s


def test_top_k_sum_above_one_is_a_protocol_finding():
    book = ScoreBook(sides=("SGLang", "baseline engine"))
    lp = np.array([-0.1, -0.2])
    good = [[(5, -0.1), (6, -3.0)], [(7, -0.2), (8, -2.5)]]
    bad = [[(5, -0.1), (6, -3.0)], [(7, -0.2), (8, -0.3)]]  # 0.82 + 0.74 > 1
    book.add(0, np.array([5, 7]), lp, lp.copy(), top_a=good, top_b=bad)
    s = _one(book)
    (f,) = s["protocol"]
    assert f["kind"] == "top-k-sum-above-one" and f["positions"] == [[0, 1]]
    assert f["message"].startswith(f"{book.sides[1]} top-k")  # side B's (words: tests/unit/words)
    assert s["status"] == "invalid"


def test_top_k_sums_are_vectorized_and_skip_empty_rows():
    sums = topk_sums([[(1, 0.0)], None, [], [(2, np.log(0.25)), (3, np.log(0.5))]])
    assert sums.tolist() == [1.0, 0.0, 0.0, 0.75]
    assert topk_over([[(1, 0.0)], [(2, np.log(0.6)), (3, np.log(0.6))]]).tolist() == [1]


def test_summary_of_reads_protocol_and_old_recordings_without_it():
    book = ScoreBook()
    book.add(0, np.arange(2), np.array([-1.0, 3.0]), np.array([-1.0, 3.0]))
    s = Summary.of(_one(book))
    assert s.status == "invalid" and s.protocol and s.protocol[0]["kind"] == "logprob-above-zero"
    assert Summary.of({"status": "pass", "passed": True}).protocol is None
    assert Summary.of({"protocol": "garbage"}).protocol is None
    assert Summary.of({"protocol": [{"message": "m"}, 3, {"kind": "x"}]}).protocol == [
        {"message": "m"}
    ]
