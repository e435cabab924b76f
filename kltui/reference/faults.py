"""Planted state bugs, so kltui's diagnosis and its stress mode can be shown end to end.

Two cache-path faults, visible on a quiet server:
- `stale-prefix`: restoring a radix-cache hit copies the wrong slot for every eighth position
  (position p with p % 8 == 3 gets the keys and values of position p - 1), like an off-by-one in a
  page table. Visible in prefill_cache_hit and decode_cache_hit (turn 2's hit covers the prompt
  too); never in match, which flushes before generating and replays with logprob_start_len=0.
- `window-evict`: when a request's restored prefix contains KV that a decode step wrote, its
  queries attend only to the last `window` positions, as if a sliding-window pool had evicted the
  oldest context too early. Only decode_cache_hit restores decode-written KV.

Five faults modelled on the field's bug reports (issue 32). The first is triggered by a position
and shows on a quiet server; the other four are triggered by load and stay invisible on a quiet
server, whose helpers flush between phases and send batches smaller than every budget:
- `kv-corrupt-after:N`: decode steps read the KV of positions >= N rounded to an FP8-like 3-bit
  mantissa (a prefill-vs-decode divergence that starts exactly at one position, as with an FP8
  KV cache whose scale breaks there). Prefill rows are exact, so side A is right and side B
  differs from the first decode step that attends position N.
- `stale-prompt-logprobs`: a request asking for prompt logprobs whose ids share at least
  STALE_MIN_SHARED tokens with a prompt-logprob request of *another* HTTP request since the last
  flush gets that request's logprob entries past the shared prefix (a prefix hit that returns
  the previous request's prompt logprobs). A quiet helper's prompt-logprob requests are one
  HTTP request per flush, so only background traffic sharing its prefixes triggers it.
- `chunk-boundary`: a prefill step whose new tokens exceed the chunked-prefill budget admits
  the request that does not fit (as SGLang's chunked prefill admits its first chunk); that
  request's rows past the budget attend only to their own chunk (the first chunk's state is
  lost at the boundary). A quiet helper's batch stays under the budget.
- `batch-switch:N`: a step that runs more than N requests uses the ordinary batched kernels
  instead of the batch-invariant ones (deterministic mode diverges above batch N).
- `evict-under-pressure`: when the radix cache evicts under memory pressure, its victim keeps
  its first half and frees the rest, but the node still answers matches for its whole length:
  a prefix restored after the partial eviction reads freed (zeroed) KV. A quiet helper never
  fills the pool.

One fault only a multi-turn run finds (issue 58), shaped like SGLang #29792:
- `decode-track-slot:T`: under --page-size > 1, a request whose radix hit restores two decode
  runs and ends off the track interval T saves its first decoded token's KV in the wrong slot
  (reference/fault_track_slot.py says exactly when and what).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kltui.reference.fault_track_slot import DEFAULT_TRACK_INTERVAL, NAME

if TYPE_CHECKING:  # the CLI imports this module before torch is needed
    import torch

FAULTS = (
    "none",
    "stale-prefix",
    "window-evict",
    "kv-corrupt-after:N",
    "stale-prompt-logprobs",
    "chunk-boundary",
    "batch-switch:N",
    "evict-under-pressure",
    "decode-track-slot:T",
)
# faults that take a number after a colon, and its default when none is given
_ARGUMENT = {"kv-corrupt-after": 64, "batch-switch": 8, NAME: DEFAULT_TRACK_INTERVAL}
NAMES = tuple(f.split(":")[0] for f in FAULTS)
STALE_PERIOD, STALE_PHASE = 8, 3
STALE_MIN_SHARED = 8
FP8_MANTISSA_BITS = 3


def parse_fault(spec: str) -> tuple[str, int | None]:
    """'batch-switch:8' -> ('batch-switch', 8); ValueError (one line) for anything else."""
    name, sep, arg = spec.strip().partition(":")
    if name not in NAMES:
        raise ValueError(f"unknown fault {spec!r}; choose from {', '.join(FAULTS)}")
    if name not in _ARGUMENT:
        if sep:
            raise ValueError(f"fault {name!r} takes no ':N'")
        return name, None
    if not sep:
        return name, _ARGUMENT[name]
    if not arg.isdigit() or int(arg) < 1:
        raise ValueError(f"fault {name!r}: N must be a positive integer, got {arg!r}")
    return name, int(arg)


def fault_arg(spec: str) -> str:
    """argparse type: the spec checked, returned as given."""
    import argparse

    try:
        parse_fault(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return spec


def fp8_like(x: torch.Tensor) -> torch.Tensor:
    """x with its mantissa rounded to FP8_MANTISSA_BITS bits (E4M3's precision, no range cut)."""
    import torch

    mant, exp = torch.frexp(x.float())
    scale = float(1 << (FP8_MANTISSA_BITS + 1))
    return torch.ldexp(torch.round(mant * scale) / scale, exp).to(x.dtype)


@dataclass(frozen=True)
class Fault:
    name: str = "none"
    window: int = 32

    def __post_init__(self) -> None:
        parse_fault(self.name)  # raises for an unknown fault
        if self.window < 1:
            raise ValueError("the fault window must be at least 1 token")

    @property
    def kind(self) -> str:
        """The fault's name without its argument."""
        return parse_fault(self.name)[0]

    @property
    def arg(self) -> int | None:
        """The N of kv-corrupt-after:N and batch-switch:N, the T of decode-track-slot:T."""
        return parse_fault(self.name)[1]

    def corrupt_restored(self, kv: torch.Tensor, length: int) -> None:
        """Apply the stale-prefix bug to restored KV [layers, 2, length, ...] in place."""
        if self.kind != "stale-prefix":
            return
        for pos in range(STALE_PHASE, length, STALE_PERIOD):
            kv[:, :, pos] = kv[:, :, pos - 1]

    def attention_window(self, restored_decode_kv: bool) -> int | None:
        if self.kind == "window-evict" and restored_decode_kv:
            return self.window
        return None

    def corrupt_after(self) -> int | None:
        """The first KV position a decode step reads corrupted (kv-corrupt-after:N)."""
        return self.arg if self.kind == "kv-corrupt-after" else None

    def switches_kernel(self, batch: int) -> bool:
        """Whether a step of `batch` requests runs the other kernel (batch-switch:N)."""
        n = self.arg if self.kind == "batch-switch" else None
        return n is not None and batch > n

    @property
    def stale_prompt_logprobs(self) -> bool:
        return self.kind == "stale-prompt-logprobs"

    @property
    def chunk_boundary(self) -> bool:
        return self.kind == "chunk-boundary"

    @property
    def partial_evict(self) -> bool:
        return self.kind == "evict-under-pressure"

    def track_interval(self) -> int | None:
        """The track interval of decode-track-slot:T (None: another fault)."""
        return self.arg if self.kind == NAME else None
