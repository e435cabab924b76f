"""--arch mamba: the recurrent state kept at checkpoints, hits where SGLang's Mamba radix cache
puts them (issue 57's figures from real SGLang 0.5.17), bit-identity under --deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from kltui.reference.arch import Arch
from tests.reference.kit import GREEDY, RefClient
from tests.reference.stateful_kit import exact, prompts, serve

LENGTHS = [482, 384, 358]


@pytest.fixture(scope="module")
def mamba(reference_servers) -> RefClient:
    return RefClient(serve(reference_servers, "--arch", "mamba"))


def test_prefill_hits_land_on_chunk_checkpoints_and_are_exact(mamba):
    ps = prompts(mamba, LENGTHS)
    r = mamba.prefill_cache_hit(ps, 8)
    # 482 -> 448 (the 64-token chunk below), 384 -> 0 (its only checkpoint is its end, and a hit
    # must leave one token to compute), 358 -> 320, as real SGLang 0.5.17 reported
    assert r.cached == [448, 0, 320]
    assert all(exact(x) for x in r.k3)


def test_decode_hit_restores_the_prefill_checkpoint_and_match_is_exact(mamba):
    ps = prompts(mamba, LENGTHS)
    r = mamba.decode_cache_hit(ps, 8)
    # turn 2 (prompt + 8 + ",") finds no decode save below 512: the prefill checkpoints
    assert r.cached == [448, 384, 320]
    assert all(exact(x) for x in r.k3)
    m = mamba.match(ps, 8)
    assert m.cached == [0, 0, 0] and all(exact(x) for x in m.k3)


def test_decode_saves_every_track_interval(reference_servers):
    c = RefClient(serve(reference_servers, "--arch", "mamba", "--mamba-track-interval", "128"))
    ps = prompts(c, [100, 200])
    r = c.decode_cache_hit(ps, 40)
    # prompt 100: prefill saves 64, decode crosses 128; prompt 200: prefill 192, no crossing
    assert r.cached == [128, 192]
    assert all(exact(x) for x in r.k3)


def test_no_buffer_keeps_only_the_states_requests_ended_with(reference_servers):
    c = RefClient(
        serve(reference_servers, "--arch", "mamba", "--mamba-radix-cache-strategy", "no_buffer")
    )
    ps = prompts(c, [150, 90])
    assert c.prefill_cache_hit(ps, 4).cached == [0, 0]  # the warm-up's state is at the end
    r = c.decode_cache_hit(ps, 6)
    assert r.cached == [150 + 6 - 1, 90 + 6 - 1]  # turn 1 ended there
    assert all(exact(x) for x in r.k3)


def test_default_kernels_are_noisy_but_far_below_a_state_bug(reference_servers):
    c = RefClient(serve(reference_servers, "--arch", "mamba", deterministic=False))
    r = c.prefill_cache_hit(prompts(c, [300, 200]), 8)
    assert r.cached == [256, 192]
    assert 0 < r.avg_kl_div < 1e-9


def test_server_info_and_the_served_config(mamba):
    info = httpx.get(mamba.server.url + "/server_info").json()
    assert info["uses_mamba_radix_cache"] is True
    assert info["mamba_radix_cache_strategy"] == "extra_buffer"
    assert info["mamba_track_interval"] == 256
    assert info["disable_cuda_graph"] is False
    assert {"mamba_full_memory_ratio", "mamba_backend", "linear_attn_backend"} <= set(info)
    cfg = json.loads((Path(info["model_path"]) / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen3NextForCausalLM"]
    assert cfg["layer_types"] == ["linear_attention", "full_attention", "full_attention"]
    assert cfg["linear_conv_kernel_dim"] == 4 and "mamba_chunk_size" not in cfg
    model = httpx.get(mamba.server.url + "/model_info").json()
    assert model["model_type"] == "qwen3_next"


def test_the_hit_leaves_one_token_to_compute(mamba):
    (p,) = prompts(mamba, [128])
    mamba.flush()
    body = {"input_ids": p, "sampling_params": {**GREEDY, "max_new_tokens": 0}}
    mamba.generate(body)
    assert mamba.generate(body)["meta_info"]["cached_tokens"] == 0  # 128 is its end: 64 is gone
    longer = {**body, "input_ids": [*p, 5, 6]}
    assert mamba.generate(longer)["meta_info"]["cached_tokens"] == 128


@pytest.mark.parametrize(
    ("arch", "problem"),
    [
        (Arch("mamba", page_size=3), "one must divide the other"),
        (Arch("mamba", page_size=16, mamba_track_interval=100), "not a multiple of --page-size"),
        (Arch("mamba", page_size=4, mamba_radix_cache_strategy="no_buffer"), "needs --page-size 1"),
        (Arch("mamba", page_size=128), None),
    ],
)
def test_settings_sglang_refuses_are_refused(arch, problem):
    got = arch.problem()
    assert (got is None) if problem is None else (problem in (got or ""))
