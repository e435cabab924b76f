"""--arch swa: sliding-window attention on alternate layers, the window layers' KV freed behind
a decoding request, and a hit that needs its window's tokens present (SGLang's SWA radix
cache)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.reference.kit import GREEDY, RefClient
from tests.reference.stateful_kit import exact, prompts, serve

WINDOW = 32


@pytest.fixture(scope="module")
def swa(reference_servers) -> RefClient:
    return RefClient(serve(reference_servers, "--arch", "swa", "--sliding-window", str(WINDOW)))


def test_decoding_past_the_window_is_bit_identical(swa):
    ps = prompts(swa, [20, 90])
    for helper in (swa.match, swa.prefill_cache_hit, swa.decode_cache_hit):
        r = helper(ps, 40)  # 20 + 40 and 90 + 40 both decode past the 32-token window
        assert all(exact(x) for x in r.k3), helper.__name__
    assert swa.decode_cache_hit(ps, 40).cached == [20 + 40 - 1, 90 + 40 - 1]


def test_a_hit_backs_off_where_the_window_was_freed(swa):
    (p,) = prompts(swa, [60])
    swa.flush()
    out = swa.generate({"input_ids": p, "sampling_params": {**GREEDY, "max_new_tokens": 60}})
    ids = out["output_ids"]
    # the turn left p + 59 tokens; the window layers keep the last 32 of them, so a request
    # that branches 10 tokens into the freed part finds its window at p's end, not past it
    branch = [*p, *ids[:10], 7, 8]
    got = swa.generate({"input_ids": branch, "sampling_params": {**GREEDY, "max_new_tokens": 1}})
    assert got["meta_info"]["cached_tokens"] == len(p)
    # one that follows the turn to its end has its window alive
    follow = [*p, *ids[:59], 7]
    got = swa.generate({"input_ids": follow, "sampling_params": {**GREEDY, "max_new_tokens": 1}})
    assert got["meta_info"]["cached_tokens"] == len(p) + 59


def test_server_info_and_the_served_config(swa):
    info = httpx.get(swa.server.url + "/server_info").json()
    assert info["uses_mamba_radix_cache"] is False and info["swa_full_tokens_ratio"] == 0.8
    assert "sliding_window" not in info  # as SGLang: the window is in the model's config
    cfg = json.loads((Path(info["model_path"]) / "config.json").read_text())
    assert cfg["sliding_window"] == WINDOW and cfg["model_type"] == "gpt_oss"
    assert cfg["layer_types"] == ["sliding_attention", "full_attention"]
