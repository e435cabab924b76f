"""cached_tokens as SGLang reports it, over HTTP, and the radix tree itself."""

from __future__ import annotations

import pytest
import torch

from kltui.reference.cache import RadixCache
from tests.reference.kit import GREEDY, RefClient


def _warm(c: RefClient, ids: list[int]) -> None:
    c.generate({"input_ids": ids, "sampling_params": {**GREEDY, "max_new_tokens": 0}})


def _gen(c: RefClient, ids: list[int], n: int = 4, **extra) -> dict:
    return c.generate(
        {"input_ids": ids, "sampling_params": {**GREEDY, "max_new_tokens": n}, **extra}
    )


def test_warm_prefill_then_generate_hits_prompt_len_minus_one(client: RefClient, prompts):
    client.flush()
    _warm(client, prompts[0])
    assert _gen(client, prompts[0])["meta_info"]["cached_tokens"] == len(prompts[0]) - 1


def test_logprob_start_len_caps_the_match(client: RefClient, prompts):
    client.flush()
    ids = prompts[1]
    _warm(client, ids)
    replay = _gen(client, ids, 0, return_logprob=True, logprob_start_len=0)
    assert replay["meta_info"]["cached_tokens"] == 0
    partial = _gen(client, ids, 2, return_logprob=True, logprob_start_len=7)
    assert partial["meta_info"]["cached_tokens"] == 7
    # Without return_logprob the start length is ignored.
    assert _gen(client, ids, 2, logprob_start_len=0)["meta_info"]["cached_tokens"] == len(ids) - 1


def test_flush_empties_the_cache(client: RefClient, prompts):
    _warm(client, prompts[2])
    client.flush()
    assert _gen(client, prompts[2])["meta_info"]["cached_tokens"] == 0


def test_second_turn_hits_the_decode_written_region(client: RefClient, prompts):
    client.flush()
    turn1 = _gen(client, prompts[3], 10)
    comma = client.tokenize([","])[0][1:]
    turn2_ids = prompts[3] + turn1["output_ids"] + comma
    turn2 = _gen(client, turn2_ids, 4)
    assert turn2["meta_info"]["cached_tokens"] == len(prompts[3]) + 10 - 1


def test_page_size_rounds_matches_down(det_server, prompts):
    c = RefClient(det_server)  # page_size 4
    c.flush()
    ids = prompts[0]
    _warm(c, ids)
    hit = _gen(c, ids)["meta_info"]["cached_tokens"]
    assert hit == (len(ids) - 1) // 4 * 4
    turn1 = _gen(c, prompts[1], 9)
    turn2 = _gen(c, prompts[1] + turn1["output_ids"] + [15], 2)
    assert turn2["meta_info"]["cached_tokens"] == (len(prompts[1]) + 9 - 1) // 4 * 4
    info = c.http.get("/server_info").json()
    assert info["page_size"] == 4


# ---- the tree in-process ----


def _kv(tokens: list[int]) -> torch.Tensor:
    # Token id in every slot, so a restored slot shows which token it came from.
    return torch.tensor(tokens, dtype=torch.float32).view(1, 1, -1, 1, 1).expand(2, 2, -1, 2, 4)


def test_tree_splits_shares_and_copies() -> None:
    cache = RadixCache()
    a, b = [1, 2, 3, 4, 5], [1, 2, 3, 9, 9, 9]
    cache.insert(a, _kv(a), torch.zeros(5, dtype=torch.bool))
    cache.insert(b, _kv(b), torch.tensor([False] * 3 + [True] * 3))
    assert cache.total_tokens == 8
    m = cache.match(b + [7], limit=7)
    assert m.length == 6
    assert m.kv[0, 0, :, 0, 0].tolist() == [1, 2, 3, 9, 9, 9]
    assert m.decode_written.tolist() == [False] * 3 + [True] * 3
    assert cache.match(a, limit=3).length == 3
    assert cache.match([5, 1], limit=2).length == 0
    m.kv.zero_()  # a copy: the cached values are untouched
    assert cache.match(a, limit=5).kv[0, 0, :, 0, 0].tolist() == [1, 2, 3, 4, 5]


def test_tree_pages_and_disable() -> None:
    cache = RadixCache(page_size=4)
    seq = list(range(10, 21))
    assert cache.insert(seq, _kv(seq), torch.zeros(11, dtype=torch.bool)) == 8
    assert cache.match(seq, limit=10).length == 8
    assert cache.match(seq[:6] + [0, 0], limit=8).length == 4
    off = RadixCache(disabled=True)
    off.insert(seq, _kv(seq), torch.zeros(11, dtype=torch.bool))
    assert off.match(seq, limit=10).length == 0


def test_tree_evicts_least_recently_used_leaves() -> None:
    cache = RadixCache(max_tokens=10)
    old, new = [1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]
    cache.insert(old, _kv(old), torch.zeros(6, dtype=torch.bool))
    cache.insert(new, _kv(new), torch.zeros(6, dtype=torch.bool))
    assert cache.total_tokens <= 10
    assert cache.match(old, limit=6).length == 0
    assert cache.match(new, limit=6).length == 6


@pytest.mark.parametrize("page", [1, 2, 3])
def test_existing_nodes_are_never_overwritten(page: int) -> None:
    cache = RadixCache(page_size=page)
    seq = [4, 5, 6, 7, 8, 9]
    cache.insert(seq, _kv(seq), torch.zeros(6, dtype=torch.bool))
    cache.insert(seq, _kv([0] * 6), torch.ones(6, dtype=torch.bool))
    m = cache.match(seq, limit=6)
    assert m.kv[0, 0, :, 0, 0].tolist() == seq[: m.length]
    assert not m.decode_written.any()
