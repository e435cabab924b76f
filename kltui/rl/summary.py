"""The import's HelperFinished summary (`build_summary`): kltui's k3 figures of the whole file,
keyed as every helper's summary, then verl's and slime's metrics, the gates and the reading
under `rl`."""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from kltui.importer.reader import Source
from kltui.metrics.k3 import MIN_SAMPLES_FOR_STABLE_MEAN, bootstrap_interval, within_threshold
from kltui.metrics.rl import (
    Accumulator,
    SequenceSums,
    by_step,
    histogram_percentile,
    slime_metrics,
    verl_metrics,
)
from kltui.metrics.summary import SummaryStatus
from kltui.rl.gate import Gate, evaluate, metric_table
from kltui.rl.reading import differing_samples, reading

BOOTSTRAP_MAX = 4096  # above this many samples the 95% interval is the normal one


class SummaryOptions(Protocol):
    """What of the import's options (`kltui.rl.stream.ImportOptions`) the summary reads."""

    tail_threshold: float
    veto: float
    gates: list[Gate]
    server_hint: str | None

    @property
    def gate_threshold(self) -> float | None:
        """avg_kl_div's gate (None: none)."""
        ...


def _interval(means: np.ndarray) -> tuple[list[float], str]:
    if means.size <= BOOTSTRAP_MAX:
        return list(bootstrap_interval(means)), "bootstrap"
    half = 1.96 * float(np.std(means, ddof=1)) / math.sqrt(means.size)
    mid = float(np.mean(means))
    return [mid - half, mid + half], "normal"


def build_summary(
    sums: SequenceSums,
    sample_ids: np.ndarray,
    acc: Accumulator,
    opts: SummaryOptions,
    *,
    n_records: int,
    bad: list[str],
    n_bad: int,
    shown: int,
    src: Source,
) -> dict:
    """The HelperFinished summary: kltui's k3 figures (as every helper reports them), verl's
    and slime's metrics, the gates, the reading and the bad records."""
    n = sums.size
    summary, method = _k3_summary(sums, sample_ids, acc, opts, n_records=n_records, n_bad=n_bad)
    avg = summary["avg_kl_div"]
    verl, slime = verl_metrics(sums), slime_metrics(sums, opts.veto)
    table = metric_table(summary, verl, slime)
    gates = evaluate(opts.gates, table)
    kl_gate = opts.gate_threshold
    passed_kl = n > 0 and (kl_gate is None or within_threshold(avg, kl_gate))
    summary["passed"] = passed_kl and all(g["passed"] for g in gates) and n_bad == 0
    if n_bad:
        summary["status"] = SummaryStatus.INVALID
        summary["reason"] = f"{n_bad} record(s) could not be used; first: {bad[0]}"
    else:
        summary["status"] = SummaryStatus.PASS if summary["passed"] else SummaryStatus.FAIL
    summary["per_sample_note"] = f"{shown} of {n} samples shown (first and worst)"
    kl_row = (
        []
        if kl_gate is None
        else [
            {
                "gate": f"avg_kl_div<{kl_gate:g}",
                "metric": "avg_kl_div",
                "value": avg,
                "passed": passed_kl,
            }
        ]
    )
    summary["rl"] = _rl_section(
        sums,
        sample_ids,
        opts,
        src,
        metrics=(verl, slime),
        gates=[*kl_row, *gates],
        interval_method=method,
        counts=(n_records, shown, n_bad),
        bad=bad,
    )
    return summary


def _k3_summary(
    sums: SequenceSums,
    sample_ids: np.ndarray,
    acc: Accumulator,
    opts: SummaryOptions,
    *,
    n_records: int,
    n_bad: int,
) -> tuple[dict[str, Any], str]:
    """kltui's k3 figures of the file, keyed as every helper's summary, and how the interval
    of avg_kl_div was taken."""
    c = sums.cols
    n = sums.size
    means = c["s_k3"] / np.maximum(c["n"], 1.0)
    tokens = int(c["n"].sum())
    avg = float(sum(np.float64(m) for m in means.tolist()) / n) if n else math.nan
    interval, method = _interval(means) if n else ([math.nan, math.nan], "none")
    n_tail = int(sums.n_tail.sum())
    summary: dict[str, Any] = {
        "samples": n_records,
        "scored": n,
        "skipped": n_bad,
        "tokens": tokens,
        "avg_kl_div": avg,
        "threshold": opts.gate_threshold,
        "tail_threshold": opts.tail_threshold,
        "token_mean_k3": float(c["s_k3"].sum() / tokens) if tokens else math.nan,
        "p50_k3": histogram_percentile(acc.hist, 50),
        "p99_k3": histogram_percentile(acc.hist, 99),
        "max_k3": math.nan,
        "max_k3_sample": None,
        "max_k3_position": None,
        "n_tail": n_tail,
        "tail_fraction": n_tail / tokens if tokens else math.nan,
        "samples_with_difference": int(np.count_nonzero(sums.n_nonzero)),
        "first_divergence": None,
        "non_finite_tokens": 0,
        "bootstrap_95": interval,
        "low_sample_warning": n < MIN_SAMPLES_FOR_STABLE_MEAN,
    }
    if n:
        summary.update(_worst(sums, sample_ids))
    return summary, method


def _worst(sums: SequenceSums, sample_ids: np.ndarray) -> dict[str, Any]:
    """The largest k3 (its sample and position) and the first divergence, in sample order."""
    at = int(np.argmax(np.where(np.isnan(sums.max_k3), -np.inf, sums.max_k3)))
    out: dict[str, Any] = {
        "max_k3": float(sums.max_k3[at]),
        "max_k3_sample": int(sample_ids[at]),
        "max_k3_position": int(sums.argmax_k3[at]),
    }
    firsts = np.where(sums.first_diff >= 0, sums.first_diff, np.iinfo(np.int64).max)
    if (sums.first_diff >= 0).any():
        j = int(np.lexsort((sample_ids, firsts))[0])
        out["first_divergence"] = {
            "sample": int(sample_ids[j]),
            "position": int(sums.first_diff[j]),
        }
    return out


def _rl_section(
    sums: SequenceSums,
    sample_ids: np.ndarray,
    opts: SummaryOptions,
    src: Source,
    *,
    metrics: tuple[dict[str, float], dict[str, float]],
    gates: list[dict],
    interval_method: str,
    counts: tuple[int, int, int],
    bad: list[str],
) -> dict[str, object]:
    """The summary's `rl`: the file, the counts (records, shown, bad), verl's and slime's
    metrics, the per-step table, the gates, the bad records, the differing samples and the
    reading."""
    n = sums.size
    n_records, shown, n_bad = counts
    catastrophic = int(np.count_nonzero(sums.cols["n_cat"])) if n else 0
    return {
        "source": {
            "path": src.path,
            "bytes": src.size,
            "adapter": src.header.adapter,
            "schema_version": src.header.version,
            "checked_against": src.header.source_version,
        },
        "records": n_records,
        "usable": n,
        "shown": shown,
        "verl": metrics[0],
        "slime": metrics[1],
        "slime_veto_threshold": opts.veto,
        "by_step": by_step(sums),
        "gates": gates,
        "interval_method": interval_method,
        "percentiles": "from a histogram of 2^(1/64)-wide bins (within 1.1 %)",
        "bad_records": n_bad,
        "bad": bad,
        "differing_samples": differing_samples(sums, sample_ids),
        "reading": reading(
            sums,
            sample_ids,
            bad=n_bad,
            veto=opts.veto,
            catastrophic_seqs=catastrophic,
            server_cmd=opts.server_hint,
        ).to_json(),
    }
