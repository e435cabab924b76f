"""What an import file shows about the training-inference mismatch, and what it cannot show.

A file of trainer and rollout logprobs knows nothing of how the rollout engine computed them
(no cache paths, no batch composition), so kltui gives no condition-1 / condition-2 reading
here: it says where the mismatch is (which samples, which positions, how concentrated), and
names the measurement that would tell more (re-scoring on the rollout server).
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np

from kltui.fmt import sci
from kltui.metrics.rl import SequenceSums


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


class ImportReading(TypedDict):
    """The summary's `reading`: the import's label, its evidence, the next step and command."""

    label: str
    evidence: list[str]
    next_step: str | None
    next_command: str | None


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
) -> ImportReading:
    """The import's diagnosis as JSON: label, evidence lines, next step and its command
    (`samples`: the sample index of each sequence of `s`)."""
    n = s.size
    if n == 0:
        return {
            "label": "inconclusive: no record could be used",
            "evidence": [f"{bad} record(s) could not be used (see the problems)"],
            "next_step": "fix the records named in the problems and import again",
            "next_command": None,
        }
    c = s.cols
    mean_k3 = c["s_k3"] / np.maximum(c["n"], 1.0)
    differ = int(np.count_nonzero(s.n_nonzero))
    tokens = int(c["n"].sum())
    diff_tokens = int(s.n_nonzero.sum())
    evidence = [
        f"{differ} of {n} samples differ between trainer and rollout "
        f"({diff_tokens} of {tokens} counted tokens)",
        "no condition-1/condition-2 reading: the file records neither the rollout engine's "
        "cache paths nor its batches, so batch variance cannot be told from a state bug",
    ]
    if differ == 0:
        label = "bit-identical: the trainer reproduces every rollout logprob exactly"
        return {
            "label": label,
            "evidence": evidence,
            "next_step": None,
            "next_command": None,
        }
    evidence += _mismatch_evidence(s, mean_k3, bad=bad, veto=veto, catastrophic=catastrophic_seqs)
    at = int(np.argmax(mean_k3))
    worst, worst_k3 = int(samples[at]), float(mean_k3[at])
    label = (
        f"training-inference mismatch in {differ} of {n} samples; worst sample "
        f"{worst} (mean k3 {sci(worst_k3)}); cause not readable from the file"
    )
    step = _rescore_step(server_cmd)
    return {
        "label": label,
        "evidence": evidence,
        "next_step": step,
        "next_command": server_cmd,
    }


def _mismatch_evidence(
    s: SequenceSums, mean_k3: np.ndarray, *, bad: int, veto: float, catastrophic: int
) -> list[str]:
    """What the file shows of a mismatch beyond its count: how concentrated it is, where it
    starts, what slime's veto would reject, and the records left out."""
    n = s.size
    evidence = []
    share = _share_of_top(mean_k3, 0.01)
    if math.isfinite(share):
        k = max(1, int(math.ceil(n * 0.01)))
        evidence.append(
            f"the worst 1% of samples ({k} of {n}) carry {share:.0%} of the summed per-sample "
            "mean k3"
        )
    firsts = s.first_diff[s.first_diff >= 0]
    if firsts.size:
        evidence.append(
            f"first differing position: median {int(np.median(firsts))}, earliest "
            f"{int(firsts.min())} (positions count trained tokens only)"
        )
    if catastrophic:
        evidence.append(
            f"{catastrophic} sample(s) hold a token whose trainer/rollout probability "
            f"ratio is below {veto:g} (slime's rs_veto_threshold: it would reject them)"
        )
    if bad:
        evidence.append(f"{bad} record(s) could not be used and are left out (see the problems)")
    return evidence


def _rescore_step(server_cmd: str | None) -> str:
    """The next step: re-scoring on the rollout server, which tells the causes apart."""
    why = (
        "teacher-forced prefill shows whether today's server reproduces the rollout's "
        "logprobs, and the match helper on the same prompts whether its decode differs from "
        "its prefill"
    )
    if server_cmd is None:  # --server is re-scoring the file now: its "server now" lines follow
        return "the re-scoring on the server, in this run, says which: " + why
    return "re-score the file on the rollout server: " + why
