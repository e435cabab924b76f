"""What counts as a cache hit, as SGLang's own test kits count it: pure functions of
`cached_tokens` and the lengths, for the cache helpers and the multiturn helper alike.

- `kl_test_utils` (0.5.23, every server): a prefill hit is `cached_tokens > 0`; a decode hit
  needs `cached_tokens > len(turn 1 prompt) + 1` (the hit reaches KV written by decode).
- `kl_multiturn_utils` (0.5.23) on a Mamba / linear-attention server, where the radix cache
  restores a recurrent state only at checkpoints:
  `make_mamba_prefill_assert(chunk_size)`: `lower <= cached <= upper` with
  `upper = (prefix_len // chunk) * chunk`, `lower = max(0, upper - chunk)`;
  `make_mamba_decode_assert(track_interval)` (max_checkpoint_lag 0, its default):
  `cached >= ((h + o - 1) // interval) * interval` for turn 1's prompt length h and output
  length o (`cached >= h` when o is 0).
The `engine` rule is the second on a Mamba server and the first on any other (a dense radix
cache restores KV token by token, so kl_test_utils' rule is the engine's there). A rule that
accepts with no checkpoint due (`upper` or the floor 0) accepts as SGLang's does; its kind says
nothing was restored.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class HitRule(StrEnum):
    """The `--hit-rule` option."""

    ENGINE = "engine"  # the server's own semantics (kl_multiturn_utils' on a Mamba server)
    KL_TEST_UTILS = "kl_test_utils"  # kl_test_utils' rule on every server (parity)


class CountedBy(StrEnum):
    """The SGLang rule that counted a helper's hits (recorded in its summary)."""

    KL_TEST_UTILS = "kl_test_utils"
    MAMBA_PREFILL = "kl_multiturn_utils.make_mamba_prefill_assert"
    MAMBA_DECODE = "kl_multiturn_utils.make_mamba_decode_assert"


class HitKind(StrEnum):
    """What a hit restored."""

    PREFIX = "prefix"  # KV of a prompt prefix (kl_test_utils' prefill rule)
    DECODE_REGION = "decode_region"  # KV past turn 1's prompt, written by decode
    CHECKPOINT = "checkpoint"  # a Mamba state saved at a checkpoint in the accepted range
    NONE_DUE = "none_due"  # accepted with no checkpoint due yet (the bound is 0)


class MissKind(StrEnum):
    """Why a request missed."""

    NO_PREFIX = "no_prefix"  # cached_tokens 0 (kl_test_utils' prefill rule)
    BEFORE_DECODE_REGION = "before_decode_region"  # cached <= turn 1's prompt + 1
    CHUNK_MULTIPLE = "chunk_multiple"  # prompt a multiple of the chunk: its only checkpoint is
    # the whole prompt, which a request cannot reuse whole (it recomputes its last token)
    BELOW_CHECKPOINT = "below_checkpoint"  # an earlier state than the rule's floor, or none
    PAST_CHECKPOINT = "past_checkpoint"  # more than the last chunk boundary (not a checkpoint)


@dataclass(frozen=True)
class HitCount:
    """One request's count: hit or miss, its kind, and the figures it rests on."""

    counted_by: CountedBy
    kind: HitKind | MissKind
    cached: int  # meta_info.cached_tokens
    length: int  # prefill: the prompt's length; decode: turn 1's prompt + output (h + o)
    lower: int  # the least cached_tokens the rule accepts
    upper: int | None = None  # the most it accepts (None: no bound)
    step: int | None = None  # the chunk or track interval (None under kl_test_utils)

    @property
    def hit(self) -> bool:
        """Whether the rule accepted the request."""
        return isinstance(self.kind, HitKind)

    def record(self) -> dict[str, Any]:
        """The recorded form (a SampleScored's `hit`, a SampleSkipped's `miss`)."""
        return {
            "rule": str(self.counted_by),
            "kind": str(self.kind),
            "cached": self.cached,
            "length": self.length,
            "lower": self.lower,
            "upper": self.upper,
            "step": self.step,
        }


def mamba_prefill_range(prefix_len: int, chunk: int) -> tuple[int, int]:
    """make_mamba_prefill_assert's accepted [lower, upper] for a prefix of `prefix_len`."""
    upper = (prefix_len // chunk) * chunk
    return max(0, upper - chunk), upper


def mamba_decode_floor(history_len: int, output_len: int, interval: int) -> int:
    """make_mamba_decode_assert's least cached_tokens after a turn of h + o tokens."""
    if output_len <= 0:
        return history_len
    return ((history_len + output_len - 1) // interval) * interval


def prefill_count(cached: int, prompt_len: int, chunk: int | None) -> HitCount:
    """A prefill hit on the same prompt: kl_test_utils' rule without a chunk (dense, or the
    parity rule), make_mamba_prefill_assert's with the server's chunk."""
    if chunk is None:
        kind = HitKind.PREFIX if cached > 0 else MissKind.NO_PREFIX
        return HitCount(CountedBy.KL_TEST_UTILS, kind, cached, prompt_len, 1)
    lower, upper = mamba_prefill_range(prompt_len, chunk)
    mkind: HitKind | MissKind
    if lower <= cached <= upper:
        mkind = HitKind.NONE_DUE if upper == 0 else HitKind.CHECKPOINT
    elif cached > upper:
        mkind = MissKind.PAST_CHECKPOINT
    elif cached == 0 and upper == prompt_len:
        mkind = MissKind.CHUNK_MULTIPLE
    else:
        mkind = MissKind.BELOW_CHECKPOINT
    return HitCount(CountedBy.MAMBA_PREFILL, mkind, cached, prompt_len, lower, upper, chunk)


def decode_count(cached: int, history_len: int, output_len: int, interval: int | None) -> HitCount:
    """A turn-2 hit after turn 1 (h = its prompt, o = its output): kl_test_utils' rule without
    an interval, make_mamba_decode_assert's with the server's track interval."""
    length = history_len + output_len
    if interval is None:
        kind = HitKind.DECODE_REGION if cached > history_len + 1 else MissKind.BEFORE_DECODE_REGION
        return HitCount(CountedBy.KL_TEST_UTILS, kind, cached, length, history_len + 2)
    floor = mamba_decode_floor(history_len, output_len, interval)
    mkind: HitKind | MissKind
    if cached >= floor:
        mkind = HitKind.NONE_DUE if floor == 0 else HitKind.CHECKPOINT
    else:
        mkind = MissKind.BELOW_CHECKPOINT
    return HitCount(CountedBy.MAMBA_DECODE, mkind, cached, length, floor, None, interval)
