"""Training-inference mismatch metrics by their owners' definitions (docs/RL.md has every
formula and where it comes from), over records streamed a chunk at a time (numpy only).

Per token t of sequence i, with the trainer's logprob `lt`, the rollout engine's `lr` and the
loss mask `m` (1 = counted): the log ratio d = lt - lr (verl's and slime's `log_ratio`, the
training policy over the rollout policy). Everything reduces to per-sequence sums, so a file of
any size is one pass and O(sequences) memory:

    n_i = sum m              s_lt_i = sum m lt           s_lr_i = sum m lr
    s_d_i = sum m d          s_k3_i = sum m (exp(d) - d - 1)
    s_rho2_i = sum m exp(2 clip(d, -20, 20))           s_abs_i = sum m |d|
    n_cat_i = sum m [d < log(veto)]

verl 0.9.1 `compute_offpolicy_metrics` (one batch = the sequences given; masked_mean divides
by sum(mask) + 1e-8) and slime v0.3.1 `add_ppl_metrics` / `calculate_veto_mask` (aggregated by
`sum_of_sample_mean`: each sequence's masked mean, with the denominator clamped to 1, then the
mean over sequences) are evaluated from these sums in `verl_metrics` and `slime_metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

SAFETY_BOUND = 20.0  # verl's and slime's clamp of log ratios before exp
_EXP_HI, _EXP_LO = math.exp(SAFETY_BOUND), math.exp(-SAFETY_BOUND)
VERL_EPS = 1e-8  # verl_F.masked_mean: sum / (mask.sum() + 1e-8)
SLIME_VETO_THRESHOLD = 1e-4  # rs_veto_threshold of slime's examples/.../mis.yaml
MAX_STEPS_LISTED = 500

# k3 histogram for the percentiles of a file too big to hold: bins of the float64 bit pattern
# (exponent and the top HIST_BITS mantissa bits: a ratio of 2^(1/64) per bin, 1.1 %), from
# 2^HIST_LO2 to 2^HIST_HI2; no logarithm per token
HIST_BITS = 6
HIST_LO2, HIST_HI2 = -70, 20
_SHIFT = 52 - HIST_BITS
_KEY_LO = (1023 + HIST_LO2) << HIST_BITS
_KEY_HI = (1023 + HIST_HI2) << HIST_BITS
HIST_BINS = _KEY_HI - _KEY_LO

COLUMNS = ("n", "s_lt", "s_lr", "s_d", "s_k3", "s_rho2", "s_abs", "n_cat")


@dataclass
class SequenceSums:
    """Per-sequence sums of one chunk (or of every chunk, concatenated), and the k3 figures
    kltui's own summary reads (max, first divergence, tail count)."""

    cols: dict[str, np.ndarray]
    step: np.ndarray  # int64, -1 where the record has none
    max_k3: np.ndarray
    argmax_k3: np.ndarray  # int64: the first position of max_k3
    first_diff: np.ndarray  # int64, -1 where every counted position is equal
    first_tail: np.ndarray
    n_tail: np.ndarray
    n_nonzero: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence[SequenceSums]) -> SequenceSums:
        """Every part, in order."""
        if not parts:
            return empty_sums()
        return cls(
            {c: np.concatenate([p.cols[c] for p in parts]) for c in COLUMNS},
            *(
                np.concatenate([getattr(p, a) for p in parts])
                for a in (
                    "step",
                    "max_k3",
                    "argmax_k3",
                    "first_diff",
                    "first_tail",
                    "n_tail",
                    "n_nonzero",
                )
            ),
        )

    @property
    def size(self) -> int:
        """Sequences."""
        return int(self.step.size)


def empty_sums() -> SequenceSums:
    """No sequences."""
    f, i = np.zeros(0), np.zeros(0, dtype=np.int64)
    return SequenceSums({c: f for c in COLUMNS}, i, f, i, i, i, i, i)


def sequence_sums(
    trainer: Sequence[np.ndarray],
    rollout: Sequence[np.ndarray],
    mask: Sequence[np.ndarray],
    steps: Sequence[int | None],
    *,
    veto: float = SLIME_VETO_THRESHOLD,
    tail: float = 1e-3,
    hist: np.ndarray | None = None,
) -> SequenceSums:
    """The per-sequence sums of a chunk of sequences (each of length >= 1, counted logprobs
    finite, as importer/schema.check guarantees), in one vectorized pass over their
    concatenated tokens; adds each counted token's k3 to `hist` when given."""
    if not trainer:
        return empty_sums()
    lens = np.fromiter((a.size for a in trainer), dtype=np.int64, count=len(trainer))
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    lt = np.concatenate(trainer).astype(np.float64, copy=False)
    lr = np.concatenate(rollout).astype(np.float64, copy=False)
    m = np.concatenate(mask).astype(bool, copy=False)
    every = bool(m.all())  # the common case: no masked-out token, no where() per column
    d = lt - lr
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(d)
        k3 = e - d - 1  # verl's and slime's order of the k3 terms
        # exp(clip(d, -20, 20)) is exp(d) inside the bounds (bit for bit): one exp, not two
        rho = np.where(d > SAFETY_BOUND, _EXP_HI, np.where(d < -SAFETY_BOUND, _EXP_LO, e))
        rho2 = rho * rho

    def seg(x: np.ndarray) -> np.ndarray:
        # where(): outside the mask trainers pad with anything (verl's masked_sum does the same)
        return np.add.reduceat(x if every else np.where(m, x, 0.0), starts)

    cols = {
        "n": lens.astype(np.float64) if every else np.add.reduceat(m, starts, dtype=np.float64),
        "s_lt": seg(lt),
        "s_lr": seg(lr),
        "s_d": seg(d),
        "s_k3": seg(k3),
        "s_rho2": seg(rho2),
        "s_abs": seg(np.abs(d)),
        "n_cat": np.add.reduceat(
            (d < math.log(veto)) if every else (m & (d < math.log(veto))), starts, dtype=np.float64
        ),
    }
    ends = starts + lens
    differs = (lt != lr) if every else m & (lt != lr)
    above = (k3 > tail) if every else m & (k3 > tail)
    first_diff = _first_per_segment(differs, starts, ends)
    first_tail = _first_per_segment(above, starts, ends)
    if hist is not None:
        add_histogram(hist, k3 if every else k3[m])
    counted_k3 = k3 if every else np.where(m, k3, -np.inf)
    max_k3 = np.maximum.reduceat(counted_k3, starts)
    at_max = _first_per_segment(counted_k3 == np.repeat(max_k3, lens), starts, ends)
    return SequenceSums(
        cols,
        np.asarray([-1 if s is None else s for s in steps], dtype=np.int64),
        max_k3,
        at_max,
        first_diff,
        first_tail,
        np.add.reduceat(above.astype(np.int64), starts),
        np.add.reduceat(differs.astype(np.int64), starts),
    )


def _first_per_segment(flags: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per segment [start, end): the first flagged position relative to its start, -1 if none
    (O(flagged), not a pass per segment)."""
    hits = np.flatnonzero(flags)
    at = np.searchsorted(hits, starts)
    found = (
        np.where(at < hits.size, hits[np.minimum(at, max(hits.size - 1, 0))], -1)
        if hits.size
        else np.full(starts.size, -1)
    )
    ok = (found >= starts) & (found < ends)
    return np.where(ok, found - starts, -1).astype(np.int64)


def new_histogram() -> np.ndarray:
    """Counts: [exactly 0, below 2^HIST_LO2, the bins..., at or above 2^HIST_HI2]."""
    return np.zeros(HIST_BINS + 3, dtype=np.int64)


def add_histogram(hist: np.ndarray, k3: np.ndarray) -> None:
    """Counts each k3 (>= 0) into its bin (a positive double's bit pattern grows with it)."""
    k3 = np.ascontiguousarray(k3, dtype=np.float64)
    if not k3.size:
        return
    zeros = int(np.count_nonzero(k3 <= 0))
    # 0 and rounding's -0/-1e-17 have bit patterns below every bin (a negative one as int64 is
    # negative): they land in "below" and are moved to "exactly 0"; NaN and inf land "above"
    key = (k3.view(np.int64) >> _SHIFT) - (_KEY_LO - 1)
    hist[1:] += np.bincount(np.clip(key, 0, HIST_BINS + 1), minlength=HIST_BINS + 2)
    hist[0] += zeros
    hist[1] -= zeros


def histogram_percentile(hist: np.ndarray, q: float) -> float:
    """The q-th percentile of the counted k3 (the value at rank q/100 * (count - 1), rounded
    down): 0, or the geometric middle of its bin (within 1.1 % of the exact value)."""
    total = int(hist.sum())
    if total == 0:
        return math.nan
    rank = q / 100.0 * (total - 1)
    at = int(np.searchsorted(np.cumsum(hist), rank, side="right"))
    if at == 0:
        return 0.0
    if at == 1:  # below the first bin
        return float(2.0**HIST_LO2)
    if at >= HIST_BINS + 2:  # above the last
        return float(2.0**HIST_HI2)
    key = np.int64(at - 2 + _KEY_LO)
    lo = float((key << _SHIFT).view(np.float64))
    hi = float(((key + 1) << _SHIFT).view(np.float64))
    return math.sqrt(lo * hi)


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if x.size else math.nan


def verl_metrics(s: SequenceSums) -> dict[str, float]:
    """verl 0.9.1's `compute_offpolicy_metrics` on these sequences as one batch (the keys it
    logs as `rollout_corr/<key>`)."""
    if not s.size:
        return {}
    c = s.cols
    den = c["n"] + VERL_EPS
    mean_lt, mean_lr = c["s_lt"] / den, c["s_lr"] / den
    tokens = float(c["n"].sum()) + VERL_EPS
    log_ppl_diff = mean_lr - mean_lt
    with np.errstate(over="ignore"):
        return {
            "training_ppl": _mean(np.exp(-mean_lt)),
            "training_log_ppl": _mean(-mean_lt),
            "kl": float(-c["s_d"].sum() / tokens),
            "k3_kl": float(c["s_k3"].sum() / tokens),
            "rollout_ppl": _mean(np.exp(-mean_lr)),
            "rollout_log_ppl": _mean(-mean_lr),
            "log_ppl_diff": _mean(log_ppl_diff),
            "log_ppl_abs_diff": _mean(np.abs(log_ppl_diff)),
            "log_ppl_diff_max": float(log_ppl_diff.max()),
            "log_ppl_diff_min": float(log_ppl_diff.min()),
            "ppl_ratio": _mean(np.exp(log_ppl_diff)),
            "chi2_token": float(c["s_rho2"].sum() / tokens - 1.0),
            "chi2_seq": _mean(np.exp(2.0 * np.clip(c["s_d"], -SAFETY_BOUND, SAFETY_BOUND)) - 1.0),
        }


def slime_metrics(s: SequenceSums, veto: float = SLIME_VETO_THRESHOLD) -> dict[str, float]:
    """slime v0.3.1's mismatch metrics (mis.py `add_ppl_metrics` with `--get-mismatch-metrics`,
    `calculate_veto_mask` at rs_veto_threshold `veto`, and loss.py's
    `train_rollout_logprob_abs_diff`), each a per-sequence masked mean averaged over sequences,
    under the names slime reports them."""
    if not s.size:
        return {}
    c = s.cols
    den = np.maximum(c["n"], 1.0)
    mean_lt, mean_lr = c["s_lt"] / den, c["s_lr"] / den
    log_ppl_diff = mean_lr - mean_lt
    with np.errstate(over="ignore"):
        return {
            "mis_training_log_ppl": _mean(-mean_lt),
            "mis_training_ppl": _mean(np.exp(-mean_lt)),
            "mis_rollout_log_ppl": _mean(-mean_lr),
            "mis_rollout_ppl": _mean(np.exp(-mean_lr)),
            "mis_kl": _mean(-c["s_d"] / den),
            "mis_k3_kl": _mean(c["s_k3"] / den),
            "mis_log_ppl_diff": _mean(log_ppl_diff),
            "mis_log_ppl_abs_diff": _mean(np.abs(log_ppl_diff)),
            "mis_ppl_ratio": _mean(np.exp(log_ppl_diff)),
            "mis_chi2_token": _mean(c["s_rho2"] / den - 1.0),
            "mis_chi2_seq": _mean(
                np.exp(2.0 * np.clip(c["s_d"], -SAFETY_BOUND, SAFETY_BOUND)) - 1.0
            ),
            "mis_rs_catastrophic_token_fraction": _mean(c["n_cat"] / den),
            "mis_rs_catastrophic_seq_fraction": _mean((c["n_cat"] > 0).astype(np.float64)),
            "train_rollout_logprob_abs_diff": _mean(c["s_abs"] / den),
        }


def by_step(s: SequenceSums) -> list[dict]:
    """verl's metrics per training step (the batch verl computes them over), for records that
    say their step; the first MAX_STEPS_LISTED steps."""
    steps = np.unique(s.step[s.step >= 0])
    out = []
    for step in steps[:MAX_STEPS_LISTED]:
        keep = s.step == step
        part = SequenceSums(
            {c: v[keep] for c, v in s.cols.items()},
            s.step[keep],
            s.max_k3[keep],
            s.argmax_k3[keep],
            s.first_diff[keep],
            s.first_tail[keep],
            s.n_tail[keep],
            s.n_nonzero[keep],
        )
        out.append({"step": int(step), "samples": int(keep.sum()), **verl_metrics(part)})
    return out


@dataclass
class Accumulator:
    """The RL metrics of a file read a chunk at a time: per-sequence sums and a k3 histogram."""

    veto: float = SLIME_VETO_THRESHOLD
    tail: float = 1e-3
    parts: list[SequenceSums] = field(default_factory=list)
    hist: np.ndarray = field(default_factory=new_histogram)

    def add(
        self,
        trainer: Sequence[np.ndarray],
        rollout: Sequence[np.ndarray],
        mask: Sequence[np.ndarray],
        steps: Sequence[int | None],
    ) -> SequenceSums:
        """One chunk of sequences; returns their sums."""
        part = sequence_sums(
            trainer, rollout, mask, steps, veto=self.veto, tail=self.tail, hist=self.hist
        )
        self.parts.append(part)
        return part

    def sums(self) -> SequenceSums:
        """Every sequence so far (the chunks joined once, then kept joined)."""
        if len(self.parts) != 1:
            self.parts = [SequenceSums.concat(self.parts)]
        return self.parts[0]
