"""`decode-track-slot[:T]`: a decode-side save that takes the wrong slot, shaped like SGLang
#29792 (the decode track save took the wrong slot under overlap scheduling; 3 of 9 multi-turn
samples dirty, the others exactly 0, and no single-turn helper saw it).

Trigger, all three at once (deterministic: no timing, no load):
- the server runs with `--page-size P`, P > 1;
- the request's radix hit holds KV written by two separate decode runs (decode-written, then
  prefill-written, then decode-written again): the request continues a conversation for its
  third turn or later, as only a multi-turn run does (match has no hit, prefill_cache_hit's hit
  was written by prefill, decode_cache_hit's turn 2 restores one decode run);
- the hit ends off the track boundary: its length m (always a whole number of pages) is not a
  multiple of the track interval T (`decode-track-slot:T`, default 16 tokens, the track
  interval of SGLang's `make_mamba_decode_assert`).

Effect: the decode-side KV save of the first decoded token (the token the prefill sampled, at
position p = len(input ids)) writes the slot of position p - 1, and slot p keeps nothing
(zeros). That step's own logprob is right (its attention ran on the KV it had just computed);
every later decode step of the request reads a wrong slot p - 1 and an empty slot p, so its
output logprobs diverge from generated position 2 on (position 0 was sampled by the prefill,
position 1 by the step that saved in the wrong slot), while a fresh prefill of the same ids
(the helpers' replay) is right. The request's cache insert at its end keeps the wrong slots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module before torch is needed
    import torch

NAME = "decode-track-slot"
DEFAULT_TRACK_INTERVAL = 16


def decode_runs(decode_written: torch.Tensor) -> int:
    """How many separate runs of decode-written positions a restored prefix holds."""
    flags = decode_written.to(dtype=bool).tolist()
    return sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1]))


def fires(page_size: int, track_interval: int, hit: int, decode_written: torch.Tensor) -> bool:
    """Whether a request restored with this hit takes the wrong slot on its first decode save."""
    return (
        page_size > 1
        and hit > 0
        and hit % track_interval != 0
        and decode_runs(decode_written[:hit]) >= 2
    )


def misplace_first_save(kv: torch.Tensor, pos: int) -> None:
    """The bug itself, after the step at `pos` wrote its KV: the save lands in slot pos - 1."""
    kv[:, :, pos - 1] = kv[:, :, pos]
    kv[:, :, pos] = 0
