"""vLLM /v1/completions parsing (captured real responses) and the client's error mapping."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from kltui.engines.errors import EngineError
from kltui.engines.vllm import VLLMClient, settings_from_server_info
from kltui.engines.vllm_parse import (
    ParseError,
    dense_topk,
    parse_completions,
    unclamp,
)

SAMPLE = (
    Path(__file__).resolve().parents[2] / "data/samples/vllm_v1_completions_prompt_logprobs.json"
)


@pytest.fixture(scope="module")
def sample() -> dict:
    return json.loads(SAMPLE.read_text())


def _sent(sample: dict, which: str = "request_2") -> list[np.ndarray]:
    return [np.asarray(sample[which]["prompt"], dtype=np.int64)]


def test_prompt_logprobs_of_a_real_response(sample):
    (c,) = parse_completions(sample["response_2"], _sent(sample), prompt_k=5, k=5)
    raw = sample["response_2"]["choices"][0]["prompt_logprobs"]
    prompt = sample["request_2"]["prompt"]
    assert c.ids_from == "token_ids"
    assert np.isnan(c.prompt.lp[0]) and c.prompt.rank[0] == -1
    for p in range(1, len(prompt)):
        entry = raw[p][str(prompt[p])]
        assert c.prompt.lp[p] == entry["logprob"]
        assert c.prompt.rank[p] == entry["rank"]
        by_rank = sorted((v["rank"], int(k)) for k, v in raw[p].items() if 1 <= v["rank"] <= 5)
        assert c.prompt.top.ids[p].tolist() == [i for _, i in by_rank]
    assert (c.prompt.top.ids[0] == -1).all() and np.isneginf(c.prompt.top.lp[0]).all()
    # rows are sorted by descending logprob
    assert (np.diff(c.prompt.top.lp[1:], axis=1) <= 0).all()


def test_generated_tokens_of_a_real_response(sample):
    (c,) = parse_completions(sample["response_2"], _sent(sample), prompt_k=5, k=5)
    choice = sample["response_2"]["choices"][0]
    assert c.output.token_ids.tolist() == choice["token_ids"]
    assert c.output.lp.tolist() == choice["logprobs"]["token_logprobs"]
    # the sampled token leads each greedy step's top-5
    assert (c.output.top.ids[:, 0] == c.output.token_ids).all()
    assert c.output.top.ids.shape == (len(choice["token_ids"]), 5)


def test_older_server_without_return_token_ids(sample):
    old = copy.deepcopy(sample["response_2"])
    old["choices"][0]["token_ids"] = None
    old["choices"][0]["prompt_token_ids"] = None
    (c,) = parse_completions(old, _sent(sample), prompt_k=5, k=5)
    assert c.ids_from == "token id strings"
    assert c.output.token_ids.tolist() == sample["response_2"]["choices"][0]["token_ids"]
    assert c.prompt.token_ids.tolist() == sample["request_2"]["prompt"]


def test_decoded_string_keys_cannot_give_token_ids(sample):
    # response_1 was requested without return_tokens_as_token_ids: keys are text and collide
    with pytest.raises(ParseError, match="return_tokens_as_token_ids"):
        parse_completions(sample["response_1"], _sent(sample, "request_1"), prompt_k=5, k=5)


def test_clamped_minus_9999_reads_as_minus_inf(sample):
    resp = copy.deepcopy(sample["response_2"])
    choice = resp["choices"][0]
    first = str(sample["request_2"]["prompt"][1])
    choice["prompt_logprobs"][1][first]["logprob"] = -9999.0
    choice["logprobs"]["token_logprobs"][0] = -9999.0
    (c,) = parse_completions(resp, _sent(sample), prompt_k=5, k=5)
    assert np.isneginf(c.prompt.lp[1])
    assert np.isneginf(c.output.lp[0])
    assert unclamp(np.array([-9999.0, -10000.0, -9998.9])).tolist() == [
        -np.inf,
        -np.inf,
        -9998.9,
    ]


def test_prompt_the_server_changed_is_an_error(sample):
    sent = [np.asarray(sample["request_2"]["prompt"][1:], dtype=np.int64)]
    with pytest.raises(ParseError, match="differ"):
        parse_completions(sample["response_2"], sent, prompt_k=5, k=5)


def test_prompt_logprobs_without_the_prompt_token(sample):
    resp = copy.deepcopy(sample["response_2"])
    tok = str(sample["request_2"]["prompt"][3])
    del resp["choices"][0]["prompt_logprobs"][3][tok]
    with pytest.raises(ParseError, match=r"prompt_logprobs\[3\]"):
        parse_completions(resp, _sent(sample), prompt_k=5, k=5)


def test_choice_count_must_match_the_batch(sample):
    with pytest.raises(ParseError, match="1 choices for a batch of 2"):
        parse_completions(sample["response_2"], _sent(sample) * 2, prompt_k=5, k=5)


def test_actual_token_inside_the_top_k_counts_once():
    resp = {
        "choices": [
            {
                "index": 0,
                "prompt_token_ids": [7, 8],
                "token_ids": [],
                "prompt_logprobs": [
                    None,
                    {
                        "8": {"logprob": -0.5, "rank": 1},
                        "9": {"logprob": -1.5, "rank": 2},
                    },
                ],
                "logprobs": None,
            }
        ]
    }
    (c,) = parse_completions(resp, [np.array([7, 8])], prompt_k=2, k=0)
    assert c.prompt.top.ids[1].tolist() == [8, 9]
    assert c.prompt.lp[1] == -0.5 and c.prompt.rank[1] == 1


def test_dense_topk_keeps_the_best_k_and_pads():
    pos = np.array([0, 0, 0, 2])
    ids = np.array([5, 6, 7, 9])
    lp = np.array([-3.0, -1.0, -2.0, -0.1])
    top = dense_topk(pos, ids, lp, 3, 2)
    assert top.ids.tolist() == [[6, 7], [-1, -1], [9, -1]]
    assert top.lp[0].tolist() == [-1.0, -2.0]
    assert top.as_lists() == [[(6, -1.0), (7, -2.0)], [], [(9, -0.1)]]


# ------------------------------------------------------------------ client, over a mock transport


def _client(handler) -> VLLMClient:
    return VLLMClient("127.0.0.1:9", transport=httpx.MockTransport(handler))


MODELS = {
    "object": "list",
    "data": [{"id": "tiny", "root": "/ckpt/tiny", "max_model_len": 512, "object": "model"}],
}


async def test_max_logprobs_400_names_the_fix():
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/models":
            return httpx.Response(200, json=MODELS)
        return httpx.Response(
            400,
            json={
                "error": {
                    "message": "Requested prompt logprobs of 25, which is greater than max "
                    "allowed: 20",
                    "type": "BadRequestError",
                    "code": 400,
                }
            },
        )

    c = _client(handler)
    with pytest.raises(EngineError) as ei:
        await c.completions([[1, 2, 3]], max_tokens=1, prompt_logprobs=25)
    await c.aclose()
    assert ei.value.kind == "max-logprobs"
    assert "--max-logprobs 25" in ei.value.message and "--top-k to 20" in ei.value.message


async def test_request_body_asks_for_token_ids():
    seen = {}

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/models":
            return httpx.Response(200, json=MODELS)
        seen.update(json.loads(req.content))
        return httpx.Response(
            200,
            json={
                "choices": [
                    {
                        "index": 0,
                        "prompt_token_ids": [1, 2],
                        "token_ids": [3],
                        "prompt_logprobs": [None, {"2": {"logprob": -0.1, "rank": 1}}],
                        "logprobs": None,
                    }
                ]
            },
        )

    c = _client(handler)
    (r,) = await c.completions([[1, 2]], max_tokens=1, prompt_logprobs=1)
    await c.aclose()
    assert seen["prompt"] == [[1, 2]] and seen["model"] == "tiny"
    assert seen["return_tokens_as_token_ids"] is True and seen["return_token_ids"] is True
    assert seen["temperature"] == 0.0 and seen["prompt_logprobs"] == 1
    assert r.output.token_ids.tolist() == [3] and r.prompt.lp[1] == -0.1


async def test_identify_without_dev_mode_reads_metrics():
    metrics = (
        "# TYPE vllm:cache_config_info gauge\n"
        'vllm:cache_config_info{block_size="16",cache_dtype="auto",'
        'enable_prefix_caching="False",engine="0"} 1.0\n'
    )

    def handler(req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if path == "/health":
            return httpx.Response(200)
        if path == "/version":
            return httpx.Response(200, json={"version": "0.32.0"})
        if path == "/v1/models":
            return httpx.Response(200, json=MODELS)
        if path == "/metrics":
            return httpx.Response(200, text=metrics)
        return httpx.Response(404, json={"detail": "Not Found"})

    c = _client(handler)
    ident = (await c.identify()).record()
    await c.aclose()
    assert ident["engine"] == "vllm" and ident["version"] == "0.32.0"
    assert ident["model_path"] == "/ckpt/tiny" and ident["max_model_len"] == 512
    assert ident["enable_prefix_caching"] is False and ident["kv_cache_dtype"] == "auto"
    assert ident["config_source"] == "v1/models+metrics"
    assert "dtype" not in ident  # not reported without dev mode: the table says unknown


async def test_missing_api_key_says_so():
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/health":
            return httpx.Response(200)
        return httpx.Response(401, json={"error": "Unauthorized"})

    c = _client(handler)
    with pytest.raises(EngineError, match="API key") as ei:
        await c.identify()
    await c.aclose()
    assert ei.value.kind == "http-401"


def test_settings_from_dev_mode_server_info():
    info = {
        "vllm_config": {
            "model_config": {
                "dtype": "torch.bfloat16",
                "tokenizer": "/ckpt/tiny",
                "max_model_len": 4096,
                "max_logprobs": 20,
                "logprobs_mode": "raw_logprobs",
                "enforce_eager": False,
                "seed": 0,
                "quantization": None,
            },
            "parallel_config": {"tensor_parallel_size": 2},
            "cache_config": {"enable_prefix_caching": True, "cache_dtype": "fp8"},
            "compilation_config": {"cudagraph_mode": 2},
            "attention_config": {"backend": "FLASH_ATTN"},
        },
        "vllm_env": {"VLLM_BATCH_INVARIANT": True},
    }
    s = settings_from_server_info(info)
    assert s["dtype"] == "torch.bfloat16" and s["tp_size"] == 2
    assert s["kv_cache_dtype"] == "fp8" and s["attention_backend"] == "FLASH_ATTN"
    assert s["batch_invariant"] is True and s["cudagraph_mode"] == 2
    assert s["quantization"] is None  # reported, and means "not quantized"
    assert "quantization" not in settings_from_server_info({"vllm_config": {}})
