"""What an import file shows about the training-inference mismatch, and what it cannot show.

A file of trainer and rollout logprobs knows nothing of how the rollout engine computed them
(no cache paths, no batch composition), so kltui gives no condition-1 / condition-2 reading
here: it finds where the mismatch is (which samples, which positions, how concentrated) and
the measurement that would tell more (re-scoring on the rollout server), as a typed finding
(`readings/imported.ImportFinding`; its words: `words/rl.py`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TypedDict

import numpy as np

from kltui.metrics.rl import SequenceSums
from kltui.readings.imported import ImportFinding, ImportKind


def _share_of_top(per_sample: np.ndarray, fraction: float) -> float:
    """The share of the total that the top `fraction` of samples carry."""
    total = float(per_sample.sum())
    if total <= 0 or not per_sample.size:
        return math.nan
    k = max(1, int(math.ceil(per_sample.size * fraction)))
    top = np.partition(per_sample, per_sample.size - k)[per_sample.size - k :]
    return float(top.sum()) / total


LISTED_DIFFERING = 8  # samples named in the console and the JSON (all are counted)


class DifferingSample(TypedDict):
    """One sample where trainer and rollout differ."""

    sample: int
    mean_k3: float
    tokens_differ: int
    first_position: int


class DifferingSamples(TypedDict):
    """The summary's `differing_samples`: how many differ, and the worst listed."""

    total: int
    listed: list[DifferingSample]


def differing_samples(s: SequenceSums, samples: np.ndarray) -> DifferingSamples:
    """Every sample where trainer and rollout differ, counted, and the worst LISTED_DIFFERING
    by mean k3 (ties by sample), each with its mean k3, its differing tokens and the first
    differing position (`samples`: the sample index of each sequence of `s`)."""
    c = s.cols
    mean_k3 = c["s_k3"] / np.maximum(c["n"], 1.0)
    rows = np.flatnonzero(s.n_nonzero > 0)
    order = rows[np.lexsort((samples[rows], -mean_k3[rows]))][:LISTED_DIFFERING]
    return {
        "total": int(rows.size),
        "listed": [
            {
                "sample": int(samples[i]),
                "mean_k3": float(mean_k3[i]),
                "tokens_differ": int(s.n_nonzero[i]),
                "first_position": int(s.first_diff[i]),
            }
            for i in order.tolist()
        ],
    }


def reading(
    s: SequenceSums,
    samples: np.ndarray,
    *,
    bad: int,
    veto: float,
    catastrophic_seqs: int,
    server_cmd: str | None,
) -> ImportFinding:
    """The import's reading: its kind and the figures it rests on (`samples`: the sample index
    of each sequence of `s`; `server_cmd`: the re-scoring command, None when --server is
    re-scoring the file in this run)."""
    n = s.size
    if n == 0:
        return ImportFinding(ImportKind.NOTHING_USABLE, samples=0, bad=bad)
    c = s.cols
    mean_k3 = c["s_k3"] / np.maximum(c["n"], 1.0)
    counted = ImportFinding(
        ImportKind.IDENTICAL,
        samples=n,
        bad=bad,
        differ=int(np.count_nonzero(s.n_nonzero)),
        tokens=int(c["n"].sum()),
        differ_tokens=int(s.n_nonzero.sum()),
    )
    if counted.differ == 0:
        return counted
    at = int(np.argmax(mean_k3))
    share = _share_of_top(mean_k3, 0.01)
    firsts = s.first_diff[s.first_diff >= 0]
    return replace(
        counted,
        kind=ImportKind.MISMATCH,
        worst_sample=int(samples[at]),
        worst_mean_k3=float(mean_k3[at]),
        top_count=max(1, int(math.ceil(n * 0.01))) if math.isfinite(share) else None,
        top_share=share if math.isfinite(share) else None,
        first_median=int(np.median(firsts)) if firsts.size else None,
        first_earliest=int(firsts.min()) if firsts.size else None,
        catastrophic=catastrophic_seqs,
        veto=veto,
        server_command=server_cmd,
    )
