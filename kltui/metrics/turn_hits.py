"""The cached_tokens a multi-turn request must report, as SGLang's `kl_multiturn_utils` (0.5.23)
asserts it, as pure functions and one seam.

- `prefill_exact`: turn 0 decodes on the warmed prefix, `cached_tokens == prefix_len`
  (`default_prefill_cache_assert`).
- `decode_dense`: a later turn restores the previous turn's history and output,
  `cached_tokens in {h+o, h+o-1, floor((h+o-1)/page)*page}` (`default_decode_cache_assert`; the
  previous turn finished by length, so its last output token never had KV computed).

`HitRules` is the seam: the multiturn helper takes one and never asks which model it talks to.
`dense_rules(page_size)` is SGLang's default; a Mamba server's checkpoint rules
(`make_mamba_prefill_assert`, `make_mamba_decode_assert`) plug in as another HitRules built
from the server's state geometry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kltui.metrics.hit_rules import mamba_decode_floor, mamba_prefill_range


class HitRule(StrEnum):
    """Which of SGLang's cache asserts a turn's hit is held to."""

    PREFILL_EXACT = "prefill_exact"  # default_prefill_cache_assert
    DECODE_DENSE = "decode_dense"  # default_decode_cache_assert
    PREFILL_MAMBA = "prefill_mamba"  # make_mamba_prefill_assert
    DECODE_MAMBA = "decode_mamba"  # make_mamba_decode_assert


@dataclass(frozen=True)
class HitExpectation:
    """What one turn's cached_tokens must be: one of `allowed`, or within [low, high] (an open
    end is None), by `rule`."""

    rule: HitRule
    allowed: tuple[int, ...] = ()
    low: int | None = None
    high: int | None = None

    def holds(self, actual: int) -> bool:
        """Whether `actual` cached tokens satisfy the rule."""
        if self.allowed:
            return actual in self.allowed
        return (self.low is None or actual >= self.low) and (
            self.high is None or actual <= self.high
        )

    @property
    def floor(self) -> int:
        """The fewest cached tokens the rule accepts (what a short hit fell below)."""
        return min(self.allowed) if self.allowed else (self.low or 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, for events and recordings."""
        return {
            "rule": str(self.rule),
            "allowed": list(self.allowed),
            "low": self.low,
            "high": self.high,
        }

    @classmethod
    def of(cls, d: object) -> HitExpectation | None:
        """Read back from a recording (untrusted): None when it is not one."""
        if not isinstance(d, dict) or d.get("rule") not in set(HitRule):
            return None
        allowed, low, high = d.get("allowed"), d.get("low"), d.get("high")
        if not isinstance(allowed, list) or not all(_is_int(v) for v in allowed):
            return None
        if not all(v is None or _is_int(v) for v in (low, high)):
            return None
        return cls(HitRule(d["rule"]), tuple(sorted(set(allowed))), low, high)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def prefill_exact(prefix_len: int) -> HitExpectation:
    """Turn 0 on the warmed prefix: exactly the prefix (default_prefill_cache_assert)."""
    return HitExpectation(HitRule.PREFILL_EXACT, (prefix_len,))


def decode_dense(history_len: int, output_len: int, page_size: int = 1) -> HitExpectation:
    """A later turn: h+o, h+o-1 or (h+o-1) cut to the page (default_decode_cache_assert)."""
    expected = history_len + output_len
    page = max(1, page_size)
    allowed = {expected, expected - 1, (expected - 1) // page * page}
    return HitExpectation(HitRule.DECODE_DENSE, tuple(sorted(allowed)))


@dataclass(frozen=True)
class HitRules:
    """The seam: a prefill rule (prefix_len -> expectation) and a decode rule
    ((history_len, output_len) -> expectation), with where they came from."""

    prefill: Callable[[int], HitExpectation]
    decode: Callable[[int, int], HitExpectation]
    source: str  # "dense, page_size 16 (/server_info)"


def dense_rules(page_size: int, source: str = "/server_info") -> HitRules:
    """SGLang's default asserts, with the server's page size."""
    page = max(1, page_size)
    return HitRules(
        prefill_exact,
        lambda h, o: decode_dense(h, o, page),
        f"dense, page_size {page} ({source})",
    )


def mamba_prefill(prefix_len: int, chunk: int) -> HitExpectation:
    """Turn 0 on a Mamba server: the last chunk boundary at or below the prefix, or the one
    before it (make_mamba_prefill_assert)."""
    lower, upper = mamba_prefill_range(prefix_len, chunk)
    return HitExpectation(HitRule.PREFILL_MAMBA, (), lower, upper)


def mamba_decode(history_len: int, output_len: int, interval: int) -> HitExpectation:
    """A later turn on a Mamba server: at least the last track-interval checkpoint the previous
    turn's decode reached (make_mamba_decode_assert)."""
    floor = mamba_decode_floor(history_len, output_len, interval)
    return HitExpectation(HitRule.DECODE_MAMBA, (), floor, None)


def mamba_rules(chunk: int, interval: int, source: str) -> HitRules:
    """kl_multiturn_utils' Mamba asserts with the server's chunk and track interval."""
    return HitRules(
        lambda n: mamba_prefill(n, chunk),
        lambda h, o: mamba_decode(h, o, interval),
        f"mamba, chunk {chunk}, track interval {interval} ({source})",
    )
