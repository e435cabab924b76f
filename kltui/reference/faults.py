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

Five faults on the stateful archs' saves (issue 57; reference/checkpoints.py), each shaped like
a real SGLang bug; every one is bit-exact wherever its saved state is never restored:
- `batch-state-offset` (--arch mamba): in a prefill step of several requests, the checkpoint of
  the 2nd..nth request (batch index i >= 1) holds the state at i tokens before the position it
  is saved as (the request's offset in the flattened batch misapplied, as the track indices
  gathered per request in SGLang's extend batch can be). Visible where a hit restores such a
  prefill checkpoint (prefill_cache_hit; decode_cache_hit when turn 2 lands on it); gone with
  --max-running-requests 1, where every prefill step holds one request.
- `graph-stale-tail` (--arch mamba, while CUDA graphs are on): a decode save keeps the SSM state
  of its step but the conv state of the step before (a captured graph's static buffer read
  before its tail was written; SGLang #24221 is the same race on the chunked-prefill path).
  Visible where a hit restores a decode save (decode_cache_hit when decoding crossed the track
  interval); gone with --disable-cuda-graph.
- `checkpoint-off-by-one` (--arch mamba): every save, prefill and decode, holds the state one
  token before the position it is saved as (PR #31369: the track boundary recorded against a
  seqlen the tracked state does not correspond to). Visible in every hit on a checkpoint.
- `swa-early-evict` (--arch swa): a decoding request's window layer loses the page its window
  starts in (the oldest in-window page freed one page early): a decode step at position p
  reads the keys from ((p + 1 - W) // page + 1) * page on, once p + 1 > W. Prefill is exact, so
  every helper diverges from the first token decoded past the window.
- `decode-track-slot` (shaped like SGLang PR #29792: under overlap scheduling the decode-side
  track save ran for the wrong batch and took the wrong slot). Trigger, exactly: a request
  whose prefix hit h (its cached_tokens) is > 0 and for which h or its prompt length is not a
  multiple of G (G = the track grid lcm(max(mamba chunk, page), --mamba-track-interval) on
  --arch mamba; the page size on --arch llama and swa, so page 1 never triggers). Such a
  request's decode-side saves are wrong: on mamba each decode save holds the request's previous
  save (the other ping-pong slot: its prefill checkpoint, or the state before the step when it
  had none); on llama/swa the KV it caches when it finishes has, at the first slot of every page
  wholly written by its decode, the KV of the slot before. Its own tokens and logprobs are
  right; only a later request that restores those saves diverges. The single-turn helpers never
  restore the saves of a request that itself hit (prefill_cache_hit's and decode_cache_hit's
  hit requests are followed by a flush), so they stay bit-exact; a multi-turn run shows it in
  every turn whose hit restores the saves of a turn that had itself started from a hit (turn 3
  on, and turn 2 of a branch whose turn 1 hit the shared prefix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    "batch-state-offset",
    "graph-stale-tail",
    "checkpoint-off-by-one",
    "swa-early-evict",
    "decode-track-slot",
)
# faults that take a number after a colon, and its default when none is given
_ARGUMENT = {"kv-corrupt-after": 64, "batch-switch": 8}
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
        """The N of kv-corrupt-after:N and batch-switch:N."""
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
