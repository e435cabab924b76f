"""One request's cache count (metrics/hit_rules.HitCount, recorded in a cache helper's
`cache_counts`) in words: what a hit restored, why a miss missed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kltui.engines.identity import as_int
from kltui.metrics.hit_rules import HitKind, MissKind


def _figures(c: Mapping[str, Any]) -> tuple[int, int, int, int | None, int]:
    cached, length = as_int(c.get("cached")) or 0, as_int(c.get("length")) or 0
    return (
        cached,
        length,
        as_int(c.get("lower")) or 0,
        as_int(c.get("upper")),
        as_int(c.get("step")) or 0,
    )


def _hit_text(kind: HitKind, c: Mapping[str, Any]) -> str:
    cached, length, lower, upper, step = _figures(c)
    if kind is HitKind.PREFIX:
        return f"cached {cached} of {length}: a restored KV prefix"
    if kind is HitKind.DECODE_REGION:
        return f"cached {cached}: past turn 1's prompt + 1 ({lower - 1}), into KV written by decode"
    if kind is HitKind.NONE_DUE:
        return (
            f"cached {cached} of {length}: no {step}-token checkpoint was due yet, "
            "accepted as SGLang's rule accepts it (nothing restored)"
        )
    if upper is None:
        return f"cached {cached} of {length}: the state at a checkpoint at or past {lower} (every {step} tokens)"
    return f"cached {cached} of {length}: the state at a {step}-token chunk boundary ({lower}..{upper})"


def _miss_text(kind: MissKind, c: Mapping[str, Any]) -> str:
    cached, length, lower, upper, step = _figures(c)
    if kind is MissKind.NO_PREFIX:
        return f"prompt {length}: nothing cached"
    if kind is MissKind.BEFORE_DECODE_REGION:
        return f"cached {cached}: not past turn 1's prompt + 1 ({lower - 1}), so no KV written by decode"
    if kind is MissKind.CHUNK_MULTIPLE:
        return f"prompt {length} is a multiple of the {step}-token chunk: no earlier checkpoint"
    if kind is MissKind.PAST_CHECKPOINT:
        return f"cached {cached} of {length}: past the last {step}-token chunk boundary {upper}, not a checkpoint"
    floor = f"{lower}..{upper}" if upper is not None else f"at least {lower}"
    return f"cached {cached} of {length}: below the checkpoint SGLang's rule expects ({floor}, every {step} tokens)"


def count_text(c: Mapping[str, Any]) -> str | None:
    """A recorded count in words (None when its kind does not read: an untrusted recording)."""
    kind = c.get("kind")
    hit = next((k for k in HitKind if k.value == kind), None)
    if hit is not None:
        return _hit_text(hit, c)
    miss = next((k for k in MissKind if k.value == kind), None)
    return None if miss is None else _miss_text(miss, c)


def sample_count_text(counts: object, sample: int) -> str | None:
    """The words of `sample`'s count among a summary's `cache_counts` (None: not counted)."""
    if not isinstance(counts, list):
        return None
    for c in counts:
        if isinstance(c, dict) and c.get("sample") == sample:
            return count_text(c)
    return None
