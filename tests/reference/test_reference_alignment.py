"""The three KL helpers over real HTTP: batch-variance noise in the default kernels, exact zeros
under --deterministic, and each planted fault visible only on its own cache path."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.reference.kit import RefClient


@pytest.fixture(scope="module")
def det(det_server) -> RefClient:
    return RefClient(det_server)


def test_default_kernels_show_real_but_tiny_noise(client: RefClient, prompts) -> None:
    result = client.match(prompts)
    flat = [x for sample in result.k3 for x in sample]
    assert all(math.isfinite(x) and x >= 0.0 for x in flat)
    assert any(x > 0.0 for x in flat), "batched kernels should differ from decode in the last bits"
    assert result.avg_kl_div < 1e-8
    assert result.cached == [0] * len(prompts)


@pytest.mark.parametrize("helper", ["match", "prefill_cache_hit", "decode_cache_hit"])
def test_deterministic_mode_is_bit_identical_on_every_path(det: RefClient, prompts, helper) -> None:
    result = getattr(det, helper)(prompts)
    assert all(x == 0.0 for sample in result.k3 for x in sample)


def test_deterministic_prefill_logprobs_equal_decode_logprobs_exactly(det: RefClient, prompts):
    det.flush()
    res = det.decode_batch(prompts, 16)
    decode = [[e[0] for e in r["meta_info"]["output_token_logprobs"]] for r in res]
    prefill = det.replay(prompts, [r["output_ids"] for r in res])
    assert prefill == decode  # float equality, every token


def test_stale_prefix_fault_shows_only_on_cache_hit_paths(stale_server, prompts) -> None:
    c = RefClient(stale_server)
    assert c.match(prompts).avg_kl_div == 0.0
    hit = c.prefill_cache_hit(prompts)
    assert all(x > 0 for x in hit.cached)
    assert hit.avg_kl_div > 1e-7
    assert c.decode_cache_hit(prompts).avg_kl_div > 1e-7


def test_window_evict_fault_shows_only_on_decode_cache_hit(window_server, prompts) -> None:
    c = RefClient(window_server)
    assert c.match(prompts).avg_kl_div == 0.0
    assert c.prefill_cache_hit(prompts).avg_kl_div == 0.0
    decode_hit = c.decode_cache_hit(prompts)
    assert all(h > p + 1 for h, p in zip(decode_hit.cached, decode_hit.prompt_lens, strict=True))
    assert decode_hit.avg_kl_div > 1e-7


def test_server_info_names_the_planted_fault(stale_server, det_server) -> None:
    info = httpx.get(stale_server.url + "/server_info").json()
    assert info["kltui_fault"] == "stale-prefix"
    assert info["enable_deterministic_inference"] is True
    assert httpx.get(det_server.url + "/server_info").json()["kltui_fault"] == "none"


def test_deterministic_results_do_not_depend_on_concurrent_clients(det: RefClient, prompts):
    """Requests from many clients share steps; in deterministic mode nobody can tell."""
    det.flush()
    alone = [det.decode_batch([p], 12)[0] for p in prompts]
    det.flush()
    with ThreadPoolExecutor(len(prompts)) as pool:
        together = list(pool.map(lambda p: det.decode_batch([p], 12)[0], prompts))
    for a, b in zip(alone, together, strict=True):
        assert a["meta_info"]["output_token_logprobs"] == b["meta_info"]["output_token_logprobs"]
