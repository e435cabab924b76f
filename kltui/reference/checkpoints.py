"""The cache state of the stateful archs, beside the radix cache's per-token KV: where a hit may
restore to, what prefill and decode save, and the planted faults on those saves.

`--arch mamba` (SGLang's Mamba radix cache, 0.5.23's unified tree with a Mamba component):
- A hit restores the latest checkpoint at or below the radix match (which is already capped at
  input_len - 1, so at least one token is computed): cached_tokens lands on a checkpoint.
- extra_buffer / extra_buffer_lazy: a prefill saves one state, at prefix + the largest multiple
  of the chunk (max(mamba chunk, page)) that fits its new tokens, or at the branching point
  (the radix match floored to the chunk, when that lies past the restored checkpoint), as
  `_mamba_radix_cache_v2_req_prepare_for_extend` does. Decode saves the state whenever seq_len
  reaches a multiple of the track grid (lcm(chunk, --mamba-track-interval)); when the request
  finishes its latest decode save goes into the tree (SGLang's ping-pong "keep" slot).
  Difference kept on purpose: the prefill save enters the tree at once (the reference server
  inserts a prompt after its prefill), SGLang's when the request finishes.
- no_buffer: no intermediate state exists; a finished request leaves the state at its end.
`--arch swa` (SGLang's SWA radix cache): a decoding request frees the window layers' KV of
tokens older than its window (kept: max(window, page) rounded up to pages); what it caches at
finish carries those tokens as tombstones. A hit needs the window's tokens present: it backs
off to the longest page-aligned prefix whose last `window` tokens are all alive (or that has no
tombstone at all).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from kltui.reference.arch import Arch
from kltui.reference.faults import Fault
from kltui.reference.mamba import RecurrentState

MAX_CHECKPOINTS = 4096  # beyond this many saved states the oldest go (a bounded pool)


@dataclass
class RequestState:
    """What one request carries for the stateful archs."""

    state: RecurrentState | None = None
    prompt_len: int = 0
    hit: int = 0  # its prefix hit (cached_tokens)
    full: int = 0  # the radix match it was restored from (the hit may stop short of it)
    batch_index: int = 0  # its place in its prefill batch
    # the latest save of the request (length, state) and the one before it (the ping-pong pair)
    track: tuple[int, RecurrentState] | None = None
    prev_track: tuple[int, RecurrentState] | None = None
    decode_saves: list[int] = field(default_factory=list)


class StateKeeper:
    def __init__(self, arch: Arch, fault: Fault) -> None:
        self.arch = arch
        self.fault = fault
        self._saved: dict[tuple[int, ...], RecurrentState] = {}

    def flush(self) -> None:
        self._saved.clear()

    # ---- hits ----

    def hit_length(self, ids: list[int], match_len: int, swa_dead: torch.Tensor | None) -> int:
        """How much of a radix match of match_len tokens a request may restore."""
        if self.arch.mamba:
            return self._checkpoint_at_or_below(ids, match_len)
        if self.arch.swa and swa_dead is not None:
            return self._window_alive(swa_dead, match_len)
        return match_len

    def _checkpoint_at_or_below(self, ids: list[int], limit: int) -> int:
        best = 0
        for key in self._saved:
            n = len(key)
            if best < n <= limit and tuple(ids[:n]) == key:
                best = n
        return best

    def _window_alive(self, dead: torch.Tensor, limit: int) -> int:
        page, window = self.arch.page_size, self.arch.sliding_window
        for m in range(limit - limit % page, 0, -page):
            if not bool(dead[max(0, m - window) : m].any()):
                return m
        return 0

    def restore(self, rs: RequestState, ids: list[int], length: int) -> None:
        if rs.state is not None and length:
            rs.state.copy_from(self._saved[tuple(ids[:length])])
        rs.hit = length

    # ---- what prefill saves ----

    def prefill_snaps(self, rs: RequestState, prefix: int, n_in: int, full: int) -> dict[int, int]:
        """Sequence length to snapshot -> the length it is saved as, for one prefill."""
        if not self.arch.mamba or not self.arch.extra_buffer:
            return {}
        chunk = self.arch.chunk
        if n_in - prefix < chunk:
            return {}
        at = prefix + (n_in - prefix) // chunk * chunk
        branching = full // chunk * chunk
        if prefix < branching < n_in and branching < at:
            at = branching
        actual = at
        if self.fault.kind == "batch-state-offset" and rs.batch_index > 0:
            actual = at - rs.batch_index  # the batch's offset of the request misapplied
        if self.fault.kind == "checkpoint-off-by-one":
            actual = at - 1
        return {actual: at}

    def after_prefill(self, rs: RequestState, ids: list[int], snaps: dict[int, RecurrentState]):
        for at, state in snaps.items():
            self._save(ids[:at], state)
            rs.prev_track, rs.track = rs.track, (at, state)

    # ---- what decode saves ----

    def decode_due(self, rs: RequestState, pos: int) -> bool:
        """Whether the decode step of the token at pos saves the state (seq_len pos + 1)."""
        return (
            rs.state is not None
            and self.arch.extra_buffer
            and (pos + 1) % self.arch.track_grid == 0
        )

    def after_decode(self, rs: RequestState, pos: int, before: RecurrentState) -> None:
        """Keep the state after the token at pos as the request's latest save; `before` is the
        state before the step (what the faults on this save read instead)."""
        assert rs.state is not None
        saved = rs.state.clone()
        kind = self.fault.kind
        if kind == "checkpoint-off-by-one":
            saved = before.clone()
        elif kind == "graph-stale-tail" and self.arch.graphs:
            saved = RecurrentState(before.conv.clone(), saved.ssm)  # the conv tail is stale
        elif self.track_slot_fault(rs, rs.prompt_len):
            saved = (rs.track[1] if rs.track else before).clone()  # the other ping-pong slot
        rs.prev_track, rs.track = rs.track, (pos + 1, saved)
        rs.decode_saves.append(pos + 1)

    def track_slot_fault(self, rs: RequestState, prompt_len: int) -> bool:
        """decode-track-slot's trigger: the request started from a radix hit, and that hit or
        its prompt length is off the save grid (the track grid on mamba, the page elsewhere)."""
        if self.fault.kind != "decode-track-slot" or rs.hit == 0:
            return False
        grid = self.arch.track_grid if self.arch.mamba else self.arch.page_size
        return bool(rs.hit % grid or prompt_len % grid)

    # ---- what a finished request leaves ----

    def on_finish(self, rs: RequestState, seq: list[int], n: int) -> None:
        """The state a finished request leaves in the tree; n tokens have KV."""
        if rs.state is None:
            return
        if not self.arch.extra_buffer:
            self._save(seq[:n], rs.state.clone())
        elif rs.decode_saves and rs.track is not None and rs.track[0] <= n:
            self._save(seq[: rs.track[0]], rs.track[1])

    def finish_kv(
        self, rs: RequestState, kv: torch.Tensor, prompt_len: int, n: int, windows: list
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The KV a finished request caches (n tokens) and, on --arch swa, its tombstones."""
        if not self.arch.mamba and self.track_slot_fault(rs, prompt_len):
            kv = kv.clone()
            page = self.arch.page_size
            first = prompt_len + (-prompt_len) % page
            for p in range(max(first, 1), n, page):
                kv[:, :, p] = kv[:, :, p - 1]  # the decode save took the neighbouring slot
        if not self.arch.swa or n <= prompt_len:
            return kv, None
        page = self.arch.page_size
        keep = -(-max(self.arch.sliding_window, page) // page) * page
        evicted = max(0, n - keep) // page * page
        dead = torch.zeros(n, dtype=torch.bool)
        dead[:evicted] = True
        kv = kv.clone()
        for li, window in enumerate(windows):
            if window is not None:
                kv[li, :, :evicted] = 0  # freed: a restore that reads it reads nothing
        return kv, dead

    def _save(self, key: list[int], state: RecurrentState) -> None:
        self._saved.pop(tuple(key), None)
        self._saved[tuple(key)] = state.clone()
        while len(self._saved) > MAX_CHECKPOINTS:
            del self._saved[next(iter(self._saved))]
