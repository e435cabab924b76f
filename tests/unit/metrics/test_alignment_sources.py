"""What each engine really runs (issue 30): the H200 run read an empty mismatch list although
SGLang ran triton and vLLM FLASH_ATTN, because vLLM's /server_info names only the backend asked
for (None: picked at load time). The table must say "unknown" there, and name the backend once
vLLM's startup log is known."""

from __future__ import annotations

from kltui.engines.vllm import (
    settings_from_cache_metric,
    settings_from_server_info,
    settings_from_startup_log,
)
from kltui.metrics.alignment import MATCH, MISMATCH, UNKNOWN, align, mismatches, unknowns

# SGLang's /server_info as the H200 run had it (0.5.17, --attention-backend triton).
SGLANG = {
    "version": "0.5.17",
    "model_path": "/root/llama8b-random",
    "served_model_name": "/root/llama8b-random",
    "dtype": "bfloat16",
    "context_length": 4096,
    "tp_size": 1,
    "attention_backend": "triton",
    "prefill_attention_backend": None,
    "disable_cuda_graph": False,
    "enable_deterministic_inference": False,
    "disable_radix_cache": False,
    "kv_cache_dtype": "auto",
    "quantization": None,
    "chunked_prefill_size": 8192,
    "max_running_requests": 128,
    "page_size": 1,
    "random_seed": 42,
}

# vLLM's /server_info?config_format=json (VLLM_SERVER_DEV_MODE=1) with its Hopper defaults,
# trimmed to what kltui reads: pydantic's JSON dump, torch dtypes as str, enums as values.
VLLM_SERVER_INFO = {
    "vllm_config": {
        "model_config": {
            "model": "/root/llama8b-random",
            "tokenizer": "/root/llama8b-random",
            "dtype": "torch.bfloat16",
            "max_model_len": 4096,
            "max_logprobs": 20,
            "logprobs_mode": "raw_logprobs",
            "enforce_eager": False,
            "seed": 0,
            "quantization": None,
        },
        "cache_config": {"block_size": 16, "cache_dtype": "auto", "enable_prefix_caching": True},
        "parallel_config": {"tensor_parallel_size": 1},
        "scheduler_config": {
            "max_num_seqs": 256,
            "max_num_batched_tokens": 8192,
            "enable_chunked_prefill": True,
        },
        "compilation_config": {"cudagraph_mode": [2, 1]},
        "attention_config": {"backend": None, "flash_attn_version": None},
    },
    "vllm_env": {"VLLM_BATCH_INVARIANT": False},
}

# vLLM 0.26's startup lines (vllm/platforms/cuda.py's selector, the engine config line).
STARTUP_LOG = """\
INFO 12-02 02:10:01 [core.py:93] Initializing a V1 LLM engine (v0.26.0) with config: \
model='/root/llama8b-random', dtype=torch.bfloat16, enforce_eager=False, tensor_parallel_size=1
INFO 12-02 02:10:09 [cuda.py:536] Using FLASH_ATTN attention backend out of potential \
backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION'].
INFO 12-02 02:10:09 [fa_utils.py:40] Using FlashAttention version 3
"""


def _vllm(log: str | None = None, **extra) -> dict:
    out = {
        "engine": "vllm",
        "model_path": "/root/llama8b-random",
        "served_model_name": "/root/llama8b-random",
        **settings_from_server_info(VLLM_SERVER_INFO),
    }
    if log is not None:
        for k, v in settings_from_startup_log(log).items():
            if out.get(k) is None:
                out[k] = v
    return {**out, **extra}


def test_an_auto_picked_vllm_backend_is_unknown_not_equal():
    rows = {r.key: r for r in align(SGLANG, _vllm(), tokenizer_probe=True)}
    att = rows["attention_backend"]
    assert att.status == UNKNOWN and att.vllm is None
    assert "startup log" in att.note
    assert "attention_backend" in [r.key for r in unknowns(list(rows.values()))]
    assert "attention_backend" not in [r.key for r in mismatches(list(rows.values()))]


def test_the_startup_log_names_the_backend_and_triton_vs_fa3_is_a_mismatch():
    found = settings_from_startup_log(STARTUP_LOG)
    assert found == {"attention_backend": "FLASH_ATTN", "flash_attn_version": 3,
                     "enforce_eager": False}  # fmt: skip
    rows = {r.key: r for r in align(SGLANG, _vllm(STARTUP_LOG), tokenizer_probe=True)}
    att = rows["attention_backend"]
    assert att.status == MISMATCH and att.vllm == "FLASH_ATTN (FA3)" and att.sglang == "triton"
    assert "attention_backend" in [r.key for r in mismatches(list(rows.values()))]


def test_older_log_spellings():
    assert settings_from_startup_log("Using AttentionBackendEnum.TRITON_ATTN backend.") == {
        "attention_backend": "TRITON_ATTN"
    }
    assert settings_from_startup_log("INFO Using Flash Attention backend.") == {
        "attention_backend": "FLASH_ATTN"
    }
    assert settings_from_startup_log("nothing about attention here") == {}


def test_flash_attention_versions_must_agree():
    fa3 = {**SGLANG, "attention_backend": "fa3"}
    same = {r.key: r for r in align(fa3, _vllm(STARTUP_LOG))}["attention_backend"]
    assert same.status == MATCH
    fa2 = _vllm(STARTUP_LOG.replace("version 3", "version 2"))
    assert {r.key: r for r in align(fa3, fa2)}["attention_backend"].status == MISMATCH
    # FLASH_ATTN without its version could be FA2 or FA3: not known to be the same kernel
    nover = _vllm(attention_backend="FLASH_ATTN")
    row = {r.key: r for r in align(fa3, nover)}["attention_backend"]
    assert row.status == UNKNOWN and "version" in row.note


def test_vllm_0_26_names_its_backend_by_class_path_and_fa3_matches_fa3():
    # seen on the H200 (2026-12-02): /server_info's attention_config.backend is the class path;
    # read as a name it made SGLang fa3 vs vLLM FLASH_ATTN (FA3) a false mismatch
    fa3 = {**SGLANG, "attention_backend": "fa3"}
    path = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
    log = "INFO 12-02 07:35:07 [flash_attn.py:776] Using FlashAttention version 3\n"
    row = {r.key: r for r in align(fa3, _vllm(log, attention_backend=path))}["attention_backend"]
    assert row.status == MATCH, row
    assert row.vllm == f"{path} (FA3)"
    # its FlashAttention version unknown: the same family, not known to be the same kernel
    row = {r.key: r for r in align(fa3, _vllm(attention_backend=path))}["attention_backend"]
    assert row.status == UNKNOWN and "version" in row.note
    triton = "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend"
    row = {r.key: r for r in align(fa3, _vllm(attention_backend=triton))}["attention_backend"]
    assert row.status == MISMATCH


def test_sglang_auto_dtype_and_unset_length_resolve_from_a_local_config():
    # SGLang 0.5.17 on the H200 reported dtype 'auto' and context_length null: both unknown
    auto = {**SGLANG, "dtype": "auto", "context_length": None}
    rows = {r.key: r for r in align(auto, _vllm())}
    assert rows["dtype"].status == UNKNOWN and rows["max_model_len"].status == UNKNOWN
    llama31 = {
        "torch_dtype": "bfloat16",
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "original_max_position_embeddings": 8192},
    }
    rows = {r.key: r for r in align(auto, _vllm(), checkpoint=llama31)}
    assert (
        rows["dtype"].status == MATCH and rows["dtype"].sglang == "auto (bfloat16 from config.json)"
    )
    assert "config.json" in rows["dtype"].note
    length = rows["max_model_len"]
    assert length.sglang == "131072 (config.json max_position_embeddings)"
    assert length.status == MISMATCH  # vLLM was started with --max-model-len 4096
    # what SGLang would scale, or an fp32 checkpoint's 'auto', stays unknown: never guessed
    yarn = {"torch_dtype": "float32", "max_position_embeddings": 4096,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}  # fmt: skip
    rows = {r.key: r for r in align(auto, _vllm(), checkpoint=yarn)}
    assert rows["dtype"].status == UNKNOWN and rows["max_model_len"].status == UNKNOWN


def test_local_config_is_read_only_for_a_loopback_server(tmp_path):
    import json

    from kltui.engines.weights import local_config

    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
    assert local_config("http://127.0.0.1:30000", str(tmp_path)) == {"torch_dtype": "bfloat16"}
    assert local_config("http://10.0.0.7:30000", str(tmp_path)) == {}
    assert local_config("http://127.0.0.1:30000", str(tmp_path / "gone")) == {}
    (tmp_path / "config.json").write_text("{not json")
    assert local_config("http://127.0.0.1:30000", str(tmp_path)) == {}


def test_sglang_prefill_backend_is_the_one_that_scores():
    s = {**SGLANG, "attention_backend": "fa3", "prefill_attention_backend": "triton"}
    row = {r.key: r for r in align(s, _vllm(STARTUP_LOG))}["attention_backend"]
    assert row.sglang == "triton" and row.status == MISMATCH
    assert row.source.startswith("SGLang prefill_attention_backend")


def test_checklist_rows_read_from_both_engines():
    rows = {r.key: r for r in align(SGLANG, _vllm(STARTUP_LOG), tokenizer_probe=True)}
    assert rows["chunked_prefill"].status == MATCH  # 8192-token chunks vs chunked prefill on
    assert rows["batch_limit"].status == MISMATCH and rows["batch_limit"].severity == "info"
    assert (rows["batch_limit"].sglang, rows["batch_limit"].vllm) == (128, 256)
    # info rows that differ between any two default servers stay in the table only
    listed = [r.key for r in mismatches(list(rows.values()))]
    assert "batch_limit" not in listed and "page_size" not in listed
    assert rows["page_size"].vllm == 16 and rows["seed"].vllm == 0
    assert rows["cuda_graph"].status == MATCH  # FULL_AND_PIECEWISE serialized as [2, 1]
    off = {r.key: r for r in align({**SGLANG, "chunked_prefill_size": -1}, _vllm())}
    assert off["chunked_prefill"].status == MISMATCH


def test_metrics_labels_are_strings():
    labels = {"block_size": "16", "cache_dtype": "fp8_e4m3", "enable_prefix_caching": "False"}
    assert settings_from_cache_metric(labels) == {
        "block_size": 16,
        "kv_cache_dtype": "fp8_e4m3",
        "enable_prefix_caching": False,
    }


def test_each_row_says_where_both_values_came_from():
    v = _vllm(setting_sources={"dtype": "/server_info", "attention_backend": "startup log"})
    rows = {r.key: r for r in align(SGLANG, v)}
    assert rows["dtype"].source == "SGLang dtype; vLLM /server_info dtype"
    assert rows["attention_backend"].source == (
        "SGLang attention_backend; vLLM startup log attention_backend"
    )
    assert rows["tp"].source.endswith("tp_size (not reported)")
