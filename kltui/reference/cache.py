"""Radix prefix cache over token ids, holding the keys and values of every cached token.

It follows SGLang's RadixCache where kltui can observe the difference:
- a match is truncated to a multiple of `page_size`, and only page-aligned prefixes are inserted;
- the caller caps the match (at most input_len - 1, and at most logprob_start_len when prompt
  logprobs are requested), so `cached_tokens` is exactly what SGLang would report;
- existing nodes are never overwritten by a later insert of the same tokens;
- least recently used leaves are evicted once more than `max_tokens` tokens are cached.

Each cached token also remembers whether its KV was written by a prefill or by a decode step,
which the planted window-evict fault needs. `partial_evict` plants evict-under-pressure
(reference/faults.py): a victim frees the second half of its KV but keeps answering for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import torch


class _Node:
    __slots__ = (
        "key",
        "kv",
        "decode_written",
        "swa_dead",
        "children",
        "parent",
        "last_access",
        "freed",
    )

    def __init__(
        self,
        key: list[int],
        kv: torch.Tensor | None,
        decode_written: torch.Tensor | None,
        parent: _Node | None,
        tick: int,
    ) -> None:
        self.key = key
        self.kv = kv  # [layers, 2, len(key), kv_heads, head_dim]
        self.decode_written = decode_written  # bool [len(key)]
        # --arch swa: the window layers' KV of these tokens was freed (SGLang's tombstone)
        self.swa_dead = None if decode_written is None else torch.zeros_like(decode_written)
        self.children: dict[int, _Node] = {}
        self.parent = parent
        self.last_access = tick
        self.freed = False  # evict-under-pressure: its tail was freed, its key kept


@dataclass(frozen=True)
class Match:
    length: int
    kv: torch.Tensor | None  # [layers, 2, length, kv_heads, head_dim], a copy; None if length 0
    decode_written: torch.Tensor  # bool [length]
    swa_dead: torch.Tensor | None = None  # bool [length]: window-layer KV freed (--arch swa)


def _common(a: Sequence[int], b: Sequence[int], start: int) -> int:
    n = 0
    limit = min(len(a), len(b) - start)
    while n < limit and a[n] == b[start + n]:
        n += 1
    return n


class RadixCache:
    def __init__(
        self,
        page_size: int = 1,
        max_tokens: int = 1 << 16,
        disabled: bool = False,
        partial_evict: bool = False,
    ):
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.page_size = page_size
        self.max_tokens = max_tokens
        self.disabled = disabled
        self.partial_evict = partial_evict
        self.evicted_tokens = 0  # since start, for /metrics (flushes do not count)
        self._ticks = itertools.count(1)
        self.flush()

    def flush(self) -> None:
        self.root = _Node([], None, None, None, 0)
        self.total_tokens = 0

    def _floor(self, n: int) -> int:
        return n - n % self.page_size

    def match(self, tokens: Sequence[int], limit: int) -> Match:
        """Longest cached prefix of tokens[:limit], page-aligned; returns a copy of its KV."""
        empty = Match(0, None, torch.zeros(0, dtype=torch.bool))
        if self.disabled:
            return empty
        limit = self._floor(max(0, min(limit, len(tokens))))
        tick = next(self._ticks)
        pieces: list[tuple[_Node, int]] = []
        node, pos = self.root, 0
        while pos < limit:
            child = node.children.get(tokens[pos])
            if child is None:
                break
            n = _common(child.key, tokens[:limit], pos)
            child.last_access = tick
            pieces.append((child, n))
            pos += n
            if n < len(child.key):
                break
            node = child
        length = self._floor(pos)
        if length == 0:
            return empty
        kvs, flags, dead, left = [], [], [], length
        for nd, n in pieces:
            take = min(n, left)
            kvs.append(nd.kv[:, :, :take])
            flags.append(nd.decode_written[:take])
            dead.append(nd.swa_dead[:take])
            left -= take
            if left == 0:
                break
        return Match(length, torch.cat(kvs, dim=2).clone(), torch.cat(flags), torch.cat(dead))

    def insert(
        self,
        tokens: Sequence[int],
        kv: torch.Tensor,
        decode_written: torch.Tensor,
        swa_dead: torch.Tensor | None = None,
    ) -> int:
        """Cache the page-aligned prefix of tokens (kv[:, :, i] holds token i); returns how many
        tokens were new. swa_dead marks tokens whose window-layer KV is freed (--arch swa)."""
        if self.disabled:
            return 0
        length = self._floor(len(tokens))
        tokens = list(tokens[:length])
        tick = next(self._ticks)
        node, pos, added = self.root, 0, 0
        while pos < length:
            child = node.children.get(tokens[pos])
            if child is None:
                leaf = _Node(
                    tokens[pos:],
                    kv[:, :, pos:length].clone(),
                    decode_written[pos:length].clone(),
                    node,
                    tick,
                )
                if swa_dead is not None:
                    leaf.swa_dead = swa_dead[pos:length].clone()
                node.children[tokens[pos]] = leaf
                added += length - pos
                break
            n = _common(child.key, tokens, pos)
            if n < len(child.key):
                self._split(child, n)
                child = node.children[tokens[pos]]
            child.last_access = tick
            node, pos = child, pos + n
        self.total_tokens += added
        self._evict()
        return added

    def _split(self, child: _Node, n: int) -> None:
        """Cut child's edge after n tokens: a new head takes child's place, child hangs off it."""
        # Copies, not views: evicting the tail later must free its memory.
        head = _Node(
            child.key[:n],
            child.kv[:, :, :n].clone(),
            child.decode_written[:n].clone(),
            child.parent,
            child.last_access,
        )
        head.freed = child.freed
        head.swa_dead = child.swa_dead[:n].clone()
        child.swa_dead = child.swa_dead[n:].clone()
        head.children[child.key[n]] = child
        child.parent.children[child.key[0]] = head
        child.key = child.key[n:]
        child.kv = child.kv[:, :, n:].clone()
        child.decode_written = child.decode_written[n:].clone()
        child.parent = head

    def _leaves(self) -> list[_Node]:
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node is not self.root:
                out.append(node)
        return out

    def _evict(self) -> None:
        while self.total_tokens > self.max_tokens:
            leaves = self._leaves()
            if not leaves:
                return
            victim = min(leaves, key=lambda nd: nd.last_access)
            keep = len(victim.key) // 2 if self.partial_evict and not victim.freed else 0
            if keep:
                # the bug: the tail's memory goes back to the pool (zeroed here) while the node
                # still matches its whole key
                victim.kv[:, :, keep:] = 0
                victim.freed = True
                freed = len(victim.key) - keep
            else:
                del victim.parent.children[victim.key[0]]
                freed = len(victim.key) - (len(victim.key) // 2 if victim.freed else 0)
            self.total_tokens -= freed
            self.evicted_tokens += freed
