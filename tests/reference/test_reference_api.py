"""Response shapes of /generate and the info routes, checked against SGLang 0.5.23's."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from kltui.engines.sglang import SERVER_INFO_KEYS
from tests.reference.kit import GREEDY, RefClient

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"  # captured from real SGLang


def test_single_text_request_prepends_bos_and_scores_every_prompt_position(client: RefClient):
    r = client.generate(
        {
            "text": "The kitchen was quiet in the early morning",
            "sampling_params": {**GREEDY, "max_new_tokens": 8},
            "return_logprob": True,
            "logprob_start_len": 0,
            "return_text_in_logprobs": True,
        }
    )
    assert set(r) == {"text", "output_ids", "meta_info"}
    meta = r["meta_info"]
    entries = meta["input_token_logprobs"]
    assert entries[0][0] is None and entries[0][1] == 0 and entries[0][2] == "<s>"
    assert len(entries) == meta["prompt_tokens"]
    assert all(isinstance(e[0], float) and e[0] <= 0.0 for e in entries[1:])
    assert "".join(e[2] for e in entries[1:]) == "The kitchen was quiet in the early morning"
    out = meta["output_token_logprobs"]
    assert [e[1] for e in out] == r["output_ids"] and len(out) == 8
    assert meta["output_token_logprobs_length"] == 8
    assert meta["finish_reason"] == {"type": "length", "length": 8}
    assert meta["completion_tokens"] == 8
    assert r["text"] == "".join(e[2] for e in out)
    assert meta["id"] and meta["weight_version"] == "default" and meta["num_retractions"] == 0
    assert meta["e2e_latency"] > 0 and meta["cached_tokens"] == 0


def test_entry_k_scores_input_ids_start_plus_k(client: RefClient, prompts):
    ids = prompts[1]
    full = client.generate(
        {
            "input_ids": ids,
            "sampling_params": {**GREEDY, "max_new_tokens": 0},
            "return_logprob": True,
            "logprob_start_len": 0,
        }
    )["meta_info"]["input_token_logprobs"]
    assert [e[1] for e in full] == ids
    start = 5
    part = client.generate(
        {
            "input_ids": ids,
            "sampling_params": {**GREEDY, "max_new_tokens": 0},
            "return_logprob": True,
            "logprob_start_len": start,
        }
    )["meta_info"]["input_token_logprobs"]
    assert len(part) == len(ids) - start
    assert part[0][0] is None and [e[1] for e in part] == ids[start:]
    # Entries after the first are the same numbers as in the full request.
    assert [e[0] for e in part[1:]] == pytest.approx([e[0] for e in full[start + 1 :]], abs=1e-5)


def test_output_only_logprobs_by_default(client: RefClient, prompts):
    r = client.decode_batch([prompts[0]], 4)[0]
    assert r["meta_info"]["input_token_logprobs"] == []
    assert all(e[2] is None for e in r["meta_info"]["output_token_logprobs"])


def test_batch_answers_in_input_order(client: RefClient, prompts):
    batch = client.decode_batch(prompts, 6)
    assert isinstance(batch, list) and len(batch) == len(prompts)
    for p, r in zip(prompts, batch, strict=True):
        assert r["meta_info"]["prompt_tokens"] == len(p)
        alone = client.decode_batch([p], 6)[0]
        assert alone["output_ids"] == r["output_ids"]
    assert len({r["meta_info"]["id"] for r in batch}) == len(prompts)


def test_top_logprobs_and_token_ids_logprob(client: RefClient, prompts):
    r = client.generate(
        {
            "input_ids": prompts[2],
            "sampling_params": {**GREEDY, "max_new_tokens": 3},
            "return_logprob": True,
            "logprob_start_len": 0,
            "top_logprobs_num": 5,
            "token_ids_logprob": [7, 11],
        }
    )
    meta = r["meta_info"]
    assert meta["input_top_logprobs"][0] is None
    assert len(meta["input_top_logprobs"]) == len(prompts[2])
    for row in meta["input_top_logprobs"][1:] + meta["output_top_logprobs"]:
        assert len(row) == 5 and [e[0] for e in row] == sorted((e[0] for e in row), reverse=True)
    # Greedy: the sampled token is the top-1 alternative with the same logprob.
    for top, tok in zip(meta["output_top_logprobs"], meta["output_token_logprobs"], strict=True):
        assert top[0][1] == tok[1] and top[0][0] == tok[0]
    assert meta["input_token_ids_logprobs"][0] is None
    assert [[e[1] for e in row] for row in meta["output_token_ids_logprobs"]] == [[7, 11]] * 3


def test_temperature_scales_output_but_not_input_logprobs(client: RefClient, prompts):
    body = {
        "input_ids": prompts[0],
        "return_logprob": True,
        "logprob_start_len": 0,
        "top_logprobs_num": 3,
    }
    hot = client.generate(
        {**body, "sampling_params": {"temperature": 0.5, "max_new_tokens": 1, "sampling_seed": 1}}
    )
    cold = client.generate({**body, "sampling_params": {"temperature": 0.0, "max_new_tokens": 1}})
    hot_in = [e[0] for e in hot["meta_info"]["input_token_logprobs"][1:]]
    cold_in = [e[0] for e in cold["meta_info"]["input_token_logprobs"][1:]]
    assert hot_in == pytest.approx(cold_in, abs=1e-5)
    hot_top = hot["meta_info"]["output_top_logprobs"][0]
    cold_top = cold["meta_info"]["output_top_logprobs"][0]
    # log_softmax(z / 0.5) puts the top token even closer to 0 than log_softmax(z).
    assert hot_top[0][0] > cold_top[0][0] or cold_top[0][0] == 0.0


def test_stop_on_eos_and_on_stop_string(client: RefClient):
    text = "The lighthouse stood on a rocky point at the end of the island"
    r = client.generate(
        {"text": text, "sampling_params": {"temperature": 0.0, "max_new_tokens": 300}}
    )
    assert r["meta_info"]["finish_reason"] == {"type": "stop", "matched": 1}
    assert r["output_ids"][-1] == 1 and "</s>" not in r["text"]
    r = client.generate(
        {
            "text": text,
            "sampling_params": {"temperature": 0.0, "max_new_tokens": 60, "stop": "reef"},
        }
    )
    assert r["meta_info"]["finish_reason"] == {"type": "stop", "matched": "reef"}
    assert "reef" not in r["text"]


def test_parallel_sampling_n_returns_one_result_per_sample(client: RefClient, prompts):
    res = client.generate(
        {"input_ids": prompts[0], "sampling_params": {"max_new_tokens": 4, "n": 3}}
    )
    assert isinstance(res, list) and len(res) == 3


def test_server_info_and_model_info(default_server):
    info = httpx.get(default_server.url + "/server_info").json()
    # every key kltui's client reads that SGLang reports too (no SGLang reports a weights
    # hash: kltui takes one itself, engines/weights.py), plus others SGLang reports
    for key in (
        *(k for k in SERVER_INFO_KEYS if k != "weights_sha256"),
        "max_total_num_tokens",
        "launch_command",
        "internal_states",
    ):
        assert key in info, key
    assert info["version"].startswith("0.5.23") and info["kltui_reference_server"] is True
    assert info["dtype"] == "float32" and info["tp_size"] == 1 and info["page_size"] == 1
    assert info["speculative_algorithm"] is None and info["disable_cuda_graph"] is True
    assert info["context_length"] == 2048
    assert (
        httpx.get(default_server.url + "/get_server_info").json()["model_path"]
        == info["model_path"]
    )
    model = httpx.get(default_server.url + "/model_info").json()
    assert model["is_generation"] is True and model["architectures"] == ["LlamaForCausalLM"]
    assert model["model_type"] == "llama"
    assert httpx.get(default_server.url + "/get_model_info").json() == model


def test_health(default_server):
    assert httpx.get(default_server.url + "/health").status_code == 200
    assert httpx.get(default_server.url + "/health_generate").status_code == 200


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="captured SGLang samples are not present")
def test_key_order_matches_a_captured_sglang_response(client: RefClient, prompts):
    real = json.loads((SAMPLES / "sglang_generate_input_ids_top5.json").read_text())
    ours = client.generate(
        {
            "input_ids": prompts[0][:9],
            "sampling_params": {**GREEDY, "max_new_tokens": 8},
            "return_logprob": True,
            "logprob_start_len": 0,
            "top_logprobs_num": 5,
        }
    )
    assert list(ours) == list(real)
    assert list(ours["meta_info"]) == list(real["meta_info"])


def test_put_and_rid(client: RefClient):
    body = {
        "input_ids": [[0, 5, 6], [0, 7]],
        "rid": ["first", "second"],
        "sampling_params": {**GREEDY, "max_new_tokens": 2, "stop_token_ids": [1]},
    }
    r = client.http.put("/generate", json=body)
    assert r.status_code == 200
    assert [x["meta_info"]["id"] for x in r.json()] == ["first", "second"]
