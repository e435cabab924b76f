"""verl's and slime's mismatch metrics on a small fixture, against the formulas of docs/RL.md
evaluated by hand here with Python's math, one token at a time (an implementation of its own,
not kltui's numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kltui.metrics.rl import sequence_sums, slime_metrics, verl_metrics

# three sequences: (trainer, rollout, mask); the third has a masked-out token with junk values
SEQS = [
    ([-0.5, -1.25, -0.01], [-0.6, -1.0, -0.01], [1, 1, 1]),
    ([-2.0, -0.3], [-2.0, -0.9], [1, 1]),
    ([-0.2, 0.7, -3.0, -0.05], [-0.25, -40.0, -2.0, -0.04], [1, 0, 1, 1]),
]
VETO = 0.5  # so that one token of the fixture is catastrophic (ratio exp(-1) < 0.5)


def hand_verl():
    eps = 1e-8
    mlt, mlr, n_all, kl, k3, rho2, chi_seq = [], [], 0.0, 0.0, 0.0, 0.0, []
    for lt, lr, m in SEQS:
        n = sum(m)
        mlt.append(sum(a * w for a, w in zip(lt, m, strict=True)) / (n + eps))
        mlr.append(sum(b * w for b, w in zip(lr, m, strict=True)) / (n + eps))
        s = 0.0
        for a, b, w in zip(lt, lr, m, strict=True):
            if not w:
                continue
            d = a - b
            n_all += 1
            kl += b - a
            k3 += math.exp(d) - d - 1
            rho2 += math.exp(max(-20, min(20, d))) ** 2
            s += d
        chi_seq.append(math.exp(2 * max(-20, min(20, s))) - 1)
    B = len(SEQS)
    diff = [r - t for r, t in zip(mlr, mlt, strict=True)]
    return {
        "training_ppl": sum(math.exp(-x) for x in mlt) / B,
        "training_log_ppl": sum(-x for x in mlt) / B,
        "kl": kl / (n_all + eps),
        "k3_kl": k3 / (n_all + eps),
        "rollout_ppl": sum(math.exp(-x) for x in mlr) / B,
        "rollout_log_ppl": sum(-x for x in mlr) / B,
        "log_ppl_diff": sum(diff) / B,
        "log_ppl_abs_diff": sum(abs(x) for x in diff) / B,
        "log_ppl_diff_max": max(diff),
        "log_ppl_diff_min": min(diff),
        "ppl_ratio": sum(math.exp(x) for x in diff) / B,
        "chi2_token": rho2 / (n_all + eps) - 1,
        "chi2_seq": sum(chi_seq) / B,
    }


def hand_slime():
    out: dict[str, list[float]] = {}

    def add(k, v):
        out.setdefault(k, []).append(v)

    for lt, lr, m in SEQS:
        n = max(sum(m), 1)
        counted = [(a, b) for a, b, w in zip(lt, lr, m, strict=True) if w]
        mt = sum(a for a, _ in counted) / n
        mr = sum(b for _, b in counted) / n
        add("mis_training_log_ppl", -mt)
        add("mis_training_ppl", math.exp(-mt))
        add("mis_rollout_log_ppl", -mr)
        add("mis_rollout_ppl", math.exp(-mr))
        add("mis_kl", sum(b - a for a, b in counted) / n)
        add("mis_k3_kl", sum(math.exp(a - b) - (a - b) - 1 for a, b in counted) / n)
        add("mis_log_ppl_diff", mr - mt)
        add("mis_log_ppl_abs_diff", abs(mr - mt))
        add("mis_ppl_ratio", math.exp(mr - mt))
        add("mis_chi2_token", sum(math.exp(a - b) ** 2 for a, b in counted) / n - 1)
        add("mis_chi2_seq", math.exp(2 * sum(a - b for a, b in counted)) - 1)
        cat = [a - b < math.log(VETO) for a, b in counted]
        add("mis_rs_catastrophic_token_fraction", sum(cat) / n)
        add("mis_rs_catastrophic_seq_fraction", float(any(cat)))
        add("train_rollout_logprob_abs_diff", sum(abs(a - b) for a, b in counted) / n)
    return {k: sum(v) / len(v) for k, v in out.items()}


def sums():
    return sequence_sums(
        [np.array(t) for t, _, _ in SEQS],
        [np.array(r) for _, r, _ in SEQS],
        [np.array(m, dtype=bool) for _, _, m in SEQS],
        [None] * len(SEQS),
        veto=VETO,
    )


def test_verl_metrics_match_the_formulas_by_hand():
    got, want = verl_metrics(sums()), hand_verl()
    assert list(got) == list(want)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-15), k


def test_slime_metrics_match_the_formulas_by_hand():
    got, want = slime_metrics(sums(), VETO), hand_slime()
    assert set(got) == set(want)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-15), k
    # the fixture was built so that the catastrophic figures are not vacuous
    assert got["mis_rs_catastrophic_seq_fraction"] == pytest.approx(1 / 3)


def test_the_masked_out_token_changes_nothing():
    # the junk at the masked-out position (a positive logprob, a ratio of e^40) is never read
    base = verl_metrics(sums())
    lt, lr, m = SEQS[2]
    other = sequence_sums(
        [np.array(t) for t, _, _ in SEQS[:2]] + [np.array([-0.2, -7.0, -3.0, -0.05])],
        [np.array(r) for _, r, _ in SEQS[:2]] + [np.array([-0.25, 0.0, -2.0, -0.04])],
        [np.array(mm, dtype=bool) for _, _, mm in SEQS],
        [None] * 3,
        veto=VETO,
    )
    assert verl_metrics(other) == base


def test_chunking_does_not_change_the_result():
    whole = sums()
    from kltui.metrics.rl import SequenceSums

    parts = [
        sequence_sums([np.array(t)], [np.array(r)], [np.array(m, dtype=bool)], [None], veto=VETO)
        for t, r, m in SEQS
    ]
    joined = SequenceSums.concat(parts)
    for key, value in verl_metrics(whole).items():
        assert verl_metrics(joined)[key] == pytest.approx(value, rel=1e-15), key
    assert whole.first_diff.tolist() == [0, 1, 0]
    assert whole.n_nonzero.tolist() == [2, 1, 3]
