"""The stated limit (readings/limit.py) runs the decision itself, vectorised: `_state` must be
`paired(...).significant` row for row, whichever of the shift, minority and spread tests
decides, or the limit would speak of another decision than the one the diagnosis makes."""

import numpy as np
import pytest

from kltui.readings.limit import _state
from kltui.readings.paired import SPREAD_MIN, SPREAD_P, flip_tails, paired, spread_tests


def _rows(rng: np.random.Generator, n: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample means of a cache path and match: dense noise of several spreads, state bugs
    on random shares at random sizes, samples at rounding level and exact ties."""
    scale = 1e-5 * np.exp(0.4 * rng.standard_normal((rows, n)))
    sigma = rng.choice([0.1, 0.5, 1.0, 2.0], size=(rows, 1))
    theirs = scale * np.exp(sigma * rng.standard_normal((rows, n)))
    mine = scale * np.exp(sigma * rng.standard_normal((rows, n)))
    mine *= rng.choice([1.0, 2.0, 5.0], size=(rows, 1))  # drifts, up to beyond the x3 tolerated
    share = rng.choice([0.0, 0.1, 0.25, 0.5, 1.0], size=(rows, 1))
    factor = rng.choice([3.0, 10.0, 100.0], size=(rows, 1))
    mine = np.where(rng.random((rows, n)) < share, mine * factor, mine)
    floor = rng.random((rows, 1)) < 0.2  # the reference server: rounding level on most samples
    low = floor & (rng.random((rows, n)) < 0.7)
    mine = np.where(low, 1e-12, mine)
    theirs = np.where(low, 7.3e-13, theirs)
    tie = rng.random((rows, n)) < 0.05
    mine = np.where(tie, theirs, mine)
    return mine, theirs


@pytest.mark.parametrize("n", [12, 20, 32, 64, 128, 230])
def test_the_vectorised_decision_is_the_paired_decision_row_for_row(n):
    rng = np.random.default_rng(n)
    mine, theirs = _rows(rng, n, 300)
    fast = _state(mine, theirs)
    slow = np.array(
        [paired("h", a, b, float(a.mean())).significant for a, b in zip(mine, theirs, strict=True)]
    )
    assert np.array_equal(fast, slow), np.flatnonzero(fast != slow)
    assert 0.05 < fast.mean() < 0.95  # both verdicts are exercised


def test_the_spread_test_alone_decides_some_rows_and_agrees_there():
    """Half the samples x10 under sigma 0.5: neither the x3-drift shift test nor the minority
    test sees it, the spread test does; `_state` and `paired` agree on those rows too."""
    rng = np.random.default_rng(7)
    n, rows = 128, 60
    theirs = 1e-5 * np.exp(0.5 * rng.standard_normal((rows, n)))
    mine = 1e-5 * np.exp(0.5 * rng.standard_normal((rows, n)))
    mine[:, : n // 2] *= 10
    decided = [paired("h", a, b, float(a.mean())) for a, b in zip(mine, theirs, strict=True)]
    spread_only = [e for e in decided if e.spread and not (e.shifted or e.minority)]
    assert len(spread_only) >= rows * 0.8
    assert np.array_equal(_state(mine, theirs), np.array([e.significant for e in decided]))
    p, excess = spread_tests(mine, theirs)
    assert np.all((p < SPREAD_P) & (excess >= SPREAD_MIN) == [e.spread for e in decided])


def test_the_sign_flip_tail_is_the_exact_one_far_into_it():
    """The saddlepoint tail against sign flips enumerated exactly (2^14 of them)."""
    rng = np.random.default_rng(3)
    a = np.abs(rng.standard_cauchy(14)) + 0.1
    signs = (((np.arange(2**14)[:, None] >> np.arange(14)) & 1) * 2 - 1).astype(float)
    sums = np.sort(signs @ a)
    for q in (1e-2, 1e-3):
        t = sums[int((1 - q) * sums.size)]
        exact = float(np.mean(sums >= t))
        approx = float(flip_tails(np.array([t]), a[None, :])[0])
        assert exact / 2 <= approx <= exact * 2, (q, exact, approx)
    assert flip_tails(np.array([a.sum()]), a[None, :])[0] == pytest.approx(2.0**-14)
