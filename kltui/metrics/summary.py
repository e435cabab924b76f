"""One helper's result, typed: what HelperFinished carries (a JSON object on the wire and in
recordings, so old recordings stay readable) and what every view and report reads.

`Summary.of` reads the object once; nothing downstream looks keys up by string. Figures a
helper adds beyond these (cross_engine's agreement and greedy comparison) stay in `raw`, read
through `kltui.outputs.reports.common.cross_fields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from kltui.metrics.presets import ThresholdSource


class SummaryStatus(StrEnum):
    """How a helper ended (docs/JSON.md `status`)."""

    PASS = "pass"
    FAIL = "fail"
    VACUOUS = "vacuous"  # ran but compared nothing (no cache hit to test, say)
    INVALID = "invalid"  # its numbers cannot be trusted (a protocol finding, a short hit)
    ERROR = "error"

    @classmethod
    def of(cls, value: object) -> SummaryStatus | None:
        """A recorded status (untrusted text); None for one this version never writes, which
        reads as an older recording's (from `passed`)."""
        try:
            return cls(value) if isinstance(value, str) else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Summary:
    """A helper's result, typed (the JSON summary of HelperFinished)."""

    status: SummaryStatus | None = None  # None: an older recording
    passed: bool = False
    samples: int | None = None
    scored: int | None = None
    skipped: int | None = None
    tokens: int | None = None
    avg_kl_div: float | None = None  # SGLang's: mean over samples of each sample's mean k3
    threshold: float | None = None  # from HelperStarted (older recordings: the summary too)
    threshold_source: ThresholdSource | None = None
    tail_threshold: float | None = None
    token_mean_k3: float | None = None
    p50_k3: float | None = None
    p99_k3: float | None = None
    max_k3: float | None = None
    max_k3_sample: int | None = None
    max_k3_position: int | None = None
    n_tail: int | None = None
    tail_fraction: float | None = None
    samples_with_difference: int | None = None
    first_divergence: dict | None = None  # {"sample", "position"}
    non_finite_tokens: int | None = None
    bootstrap_95: list | None = None
    low_sample_warning: bool | None = None
    hits: int | None = None  # cache helpers: samples that hit the radix cache
    hit_ratio: float | None = None
    hit_failure: str | None = None
    # cache helpers: the SGLang rule that counted the hits (metrics/hit_rules.CountedBy), its
    # chunk or track interval (None under kl_test_utils' rule), and each request's count
    hit_rule: str | None = None
    hit_step: int | None = None
    cache_counts: list | None = None
    # cache helpers: the server's KV pool (max_total_num_tokens, None: not reported) and the
    # tokens of every hit request's input, all warmed before the first hit
    kv_pool_tokens: int | None = None
    hit_input_tokens: int | None = None
    error: str | None = None
    reason: str | None = None
    separator_ids: list | None = None  # decode_cache_hit: the turn-2 "," as sent
    separator_source: str | None = None  # --separator-ids, the server's or a local tokenizer
    id_mismatch_tokens: int | None = None
    id_mismatches: list | None = None
    # protocol findings (kltui.metrics.protocol): [{"kind", "message", "samples", "positions",
    # "count"}]; [] when checked and none found, None in recordings older than the check.
    # A helper with any is status "invalid" (reason: the first), never pass, never numerics.
    protocol: list | None = None
    per_sample: list = field(default_factory=list)
    live: bool = False  # computed from a running helper's ScoreBook, not its final result
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(
        cls,
        d: dict[str, Any] | None,
        *,
        threshold: float | None = None,
        threshold_source: ThresholdSource | None = None,
        tail_threshold: float | None = None,
    ) -> Summary:
        """Read a HelperFinished summary; the thresholds and their source (sent once, in
        HelperStarted) fill in what the summary itself does not hold."""
        d = d if isinstance(d, dict) else {}
        known = {k: d[k] for k in _NAMES if k in d and d[k] is not None}
        known["threshold_source"] = ThresholdSource.of(d.get("threshold_source"))
        if known["threshold_source"] is None:
            known["threshold_source"] = threshold_source
        if "threshold" not in known and threshold is not None:
            known["threshold"] = threshold
        if "tail_threshold" not in known and tail_threshold is not None:
            known["tail_threshold"] = tail_threshold
        known["status"] = SummaryStatus.of(d.get("status"))
        known["passed"] = bool(d.get("passed"))
        known["live"] = bool(d.get("live"))
        if not isinstance(known.get("per_sample"), list):
            known["per_sample"] = []
        if "protocol" in known:  # a recording is untrusted: findings are objects with a message
            found = known["protocol"]
            known["protocol"] = (
                [f for f in found if isinstance(f, dict) and isinstance(f.get("message"), str)]
                if isinstance(found, list)
                else None
            )
        return cls(**known, raw=dict(d))

    @property
    def figures(self) -> Mapping[str, Any]:
        """What the helper reported beyond the typed fields (cross_engine's agreement, greedy
        comparison, alignment), read-only."""
        return MappingProxyType({k: v for k, v in self.raw.items() if k not in _TYPED})

    def has(self, key: str) -> bool:
        """The helper reported `key` (JSON reports copy only what was reported)."""
        return key in self.raw

    @property
    def result(self) -> SummaryStatus:
        """The status; pass/fail from `passed` when older recordings have none."""
        return self.status or (SummaryStatus.PASS if self.passed else SummaryStatus.FAIL)


_NAMES = tuple(f.name for f in fields(Summary) if f.name not in ("raw", "passed", "live"))
_TYPED = frozenset(f.name for f in fields(Summary))
