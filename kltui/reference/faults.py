"""Planted state bugs, each on one cache path only, so kltui's diagnosis can be shown end to end.

- `stale-prefix`: restoring a radix-cache hit copies the wrong slot for every eighth position
  (position p with p % 8 == 3 gets the keys and values of position p - 1), like an off-by-one in a
  page table. Visible in prefill_cache_hit and decode_cache_hit (turn 2's hit covers the prompt
  too); never in match, which flushes before generating and replays with logprob_start_len=0.
- `window-evict`: when a request's restored prefix contains KV that a decode step wrote, its
  queries attend only to the last `window` positions, as if a sliding-window pool had evicted the
  oldest context too early. Only decode_cache_hit restores decode-written KV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module before torch is needed
    import torch

FAULTS = ("none", "stale-prefix", "window-evict")
STALE_PERIOD, STALE_PHASE = 8, 3


@dataclass(frozen=True)
class Fault:
    name: str = "none"
    window: int = 32

    def __post_init__(self) -> None:
        if self.name not in FAULTS:
            raise ValueError(f"unknown fault {self.name!r}; choose from {', '.join(FAULTS)}")
        if self.window < 1:
            raise ValueError("the fault window must be at least 1 token")

    def corrupt_restored(self, kv: torch.Tensor, length: int) -> None:
        """Apply the stale-prefix bug to restored KV [layers, 2, length, ...] in place."""
        if self.name != "stale-prefix":
            return
        for pos in range(STALE_PHASE, length, STALE_PERIOD):
            kv[:, :, pos] = kv[:, :, pos - 1]

    def attention_window(self, restored_decode_kv: bool) -> int | None:
        if self.name == "window-evict" and restored_decode_kv:
            return self.window
        return None
