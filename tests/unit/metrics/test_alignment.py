"""Configuration alignment between an SGLang server and a vLLM baseline (pure function)."""

from __future__ import annotations

import pytest

from kltui.metrics.alignment import (
    MATCH,
    MISMATCH,
    UNKNOWN,
    align,
    describe,
    mismatches,
    refusals,
)
from kltui.metrics.engine_settings import norm_attention, norm_dtype

# Shapes as the real servers report them (SGLang 0.5.23 /server_info, kltui's vLLM identity
# with VLLM_SERVER_DEV_MODE=1), trimmed to the keys alignment reads.
SGLANG = {
    "version": "0.5.23",
    "model_path": "/models/Qwen3-8B",
    "tokenizer_path": "/models/Qwen3-8B",
    "served_model_name": "/models/Qwen3-8B",
    "weight_version": "default",
    "dtype": "bfloat16",
    "context_length": 4096,
    "tp_size": 1,
    "attention_backend": "flashinfer",
    "disable_cuda_graph": False,
    "cuda_graph_backend_decode": None,
    "enable_deterministic_inference": False,
    "disable_radix_cache": False,
    "kv_cache_dtype": "auto",
    "quantization": None,
}
VLLM = {
    "url": "http://127.0.0.1:8000",
    "engine": "vllm",
    "version": "0.32.0",
    "served_model_name": "Qwen/Qwen3-8B",
    "model_path": "Qwen/Qwen3-8B",
    "max_model_len": 4096,
    "dtype": "torch.bfloat16",
    "tokenizer": "Qwen/Qwen3-8B",
    "tp_size": 1,
    "attention_backend": "FLASHINFER",
    "enforce_eager": False,
    "cudagraph_mode": 2,
    "batch_invariant": False,
    "enable_prefix_caching": True,
    "kv_cache_dtype": "auto",
    "quantization": None,
    "logprobs_mode": "raw_logprobs",
    "max_logprobs": 20,
}


def _rows(s=None, v=None, **kw):
    return {r.key: r for r in align({**SGLANG, **(s or {})}, {**VLLM, **(v or {})}, **kw)}


def test_aligned_servers_have_no_mismatch():
    rows = _rows(tokenizer_probe=True)
    assert mismatches(list(rows.values())) == []
    for key in ("model", "dtype", "max_model_len", "vocabulary", "tp", "attention_backend",
                "cuda_graph", "deterministic", "prefix_caching", "kv_cache_dtype",
                "quantization", "logprobs_mode", "max_logprobs"):  # fmt: skip
        assert rows[key].status == MATCH, key
    assert rows["weights"].status == UNKNOWN  # no server reports a weights hash
    assert rows["version"].sglang == "0.5.23" and rows["version"].vllm == "0.32.0"


def test_hub_id_and_local_copy_are_the_same_model():
    assert _rows()["model"].status == MATCH


def test_another_model_is_refused():
    other = {**VLLM, "model_path": "meta-llama/Llama-3-8B", "served_model_name": "llama"}
    rows = align(SGLANG, other)
    bad = refusals(rows)
    assert [r.key for r in bad] == ["model"]
    assert "Llama-3-8B" in describe(bad[0]) and "Qwen3-8B" in describe(bad[0])


def test_another_vocabulary_is_refused():
    rows = list(align(SGLANG, VLLM, tokenizer_probe=False))
    assert [r.key for r in refusals(rows)] == ["vocabulary"]
    assert _rows(tokenizer_probe=None)["vocabulary"].status == UNKNOWN


@pytest.mark.parametrize(
    ("s", "v", "key"),
    [
        ({"dtype": "float16"}, {}, "dtype"),
        ({}, {"max_model_len": 2048}, "max_model_len"),
        ({"tp_size": 2}, {}, "tp"),
        ({"attention_backend": "fa3"}, {}, "attention_backend"),
        ({}, {"enforce_eager": True}, "cuda_graph"),
        ({"enable_deterministic_inference": True}, {}, "deterministic"),
        ({"disable_radix_cache": True}, {}, "prefix_caching"),
        ({}, {"kv_cache_dtype": "fp8"}, "kv_cache_dtype"),
        ({"quantization": "fp8"}, {}, "quantization"),
        ({}, {"logprobs_mode": "processed_logits"}, "logprobs_mode"),
        ({}, {"max_logprobs": 2}, "max_logprobs"),
    ],
)
def test_each_setting_that_differs_is_a_warning(s, v, key):
    rows = _rows(s, v, tokenizer_probe=True)
    assert rows[key].status == MISMATCH
    assert [r.key for r in mismatches(list(rows.values()))] == [key]
    assert refusals(list(rows.values())) == []
    assert rows[key].why


def test_unreported_settings_are_unknown_not_matches():
    # a vLLM without dev mode reports only /v1/models and /metrics
    plain = {k: VLLM[k] for k in ("url", "engine", "version", "served_model_name",
                                   "model_path", "max_model_len")}  # fmt: skip
    plain["enable_prefix_caching"] = True
    plain["kv_cache_dtype"] = "auto"
    rows = {r.key: r for r in align(SGLANG, plain)}
    for key in ("dtype", "tp", "attention_backend", "cuda_graph", "deterministic",
                "quantization", "logprobs_mode", "max_logprobs"):  # fmt: skip
        assert rows[key].status == UNKNOWN, key
    assert rows["prefix_caching"].status == MATCH
    assert rows["kv_cache_dtype"].status == MATCH  # "auto" on both follows the model dtype


def test_cuda_graph_spellings():
    # SGLang 0.5.23's new spelling turns graphs off even when disable_cuda_graph is False
    rows = _rows({"cuda_graph_backend_decode": "disabled"}, {"enforce_eager": True})
    assert rows["cuda_graph"].sglang is False and rows["cuda_graph"].status == MATCH
    # vLLM serializes CUDAGraphMode.NONE as 0
    rows = _rows({"disable_cuda_graph": True}, {"enforce_eager": False, "cudagraph_mode": 0})
    assert rows["cuda_graph"].vllm is False and rows["cuda_graph"].status == MATCH


def test_max_logprobs_minus_one_means_unlimited():
    assert _rows(v={"max_logprobs": -1}, top_k=50)["max_logprobs"].status == MATCH
    assert _rows(v={"max_logprobs": 20}, top_k=21)["max_logprobs"].status == MISMATCH


def test_auto_dtype_is_not_comparable():
    rows = _rows({"dtype": "auto"})
    assert rows["dtype"].status == UNKNOWN and "auto" in rows["dtype"].note


def test_normalisers():
    assert norm_dtype("torch.bfloat16") == norm_dtype("bf16") == "bfloat16"
    assert norm_dtype("half") == "float16" and norm_dtype("auto") is None
    assert norm_attention("FLASH_ATTN") == norm_attention("fa3") == "flash-attention"
    assert norm_attention("AttentionBackendEnum.TRITON_ATTN") == "triton"
    assert norm_attention("torch_native") == norm_attention("TORCH_SDPA")
