"""Where each row of the alignment table (`alignment.py`) was read: SGLang's /server_info field
and the vLLM identity's key, with the endpoint that reported it (`setting_sources`)."""

from __future__ import annotations

# Where each row's values come from: SGLang's /server_info (and /model_info) field, and the
# key of kltui's vLLM identity, whose `setting_sources` says which endpoint reported it.
FIELDS: dict[str, tuple[str, str]] = {
    "model": ("model_path", "model_path"),
    "weights": ("weight_version", "weights_sha256"),
    "dtype": ("dtype", "dtype"),
    "max_model_len": ("context_length", "max_model_len"),
    "vocabulary": ("tokenize probe", "/tokenize probe"),
    "tp": ("tp_size", "tp_size"),
    "cuda_graph": ("disable_cuda_graph, cuda_graph_backend_decode", "cudagraph_mode"),
    "deterministic": ("enable_deterministic_inference", "batch_invariant"),
    "prefix_caching": ("disable_radix_cache", "enable_prefix_caching"),
    "kv_cache_dtype": ("kv_cache_dtype", "kv_cache_dtype"),
    "quantization": ("quantization", "quantization"),
    "chunked_prefill": ("chunked_prefill_size", "enable_chunked_prefill"),
    "batch_limit": ("max_running_requests", "max_num_seqs"),
    "page_size": ("page_size", "block_size"),
    "seed": ("random_seed", "seed"),
    "logprobs_mode": ("(SGLang source)", "logprobs_mode"),
    "max_logprobs": ("top-k asked", "max_logprobs"),
    "version": ("version", "version"),
}


def setting_source(s_field: str, vllm: dict, v_key: str) -> str:
    where = vllm.get("setting_sources")
    found = where.get(v_key) if isinstance(where, dict) else None
    if v_key == "cudagraph_mode" and isinstance(where, dict) and not found:
        found = where.get("enforce_eager")
        v_key = "enforce_eager"
    v_src = f"{found} {v_key}" if found else f"{v_key} (not reported)"
    return f"SGLang {s_field}; vLLM {v_src}"


def source_of(key: str, vllm: dict) -> str:
    """The source of row `key` ("" for a row without a fixed field)."""
    if key not in FIELDS:
        return ""
    s_field, v_key = FIELDS[key]
    return setting_source(s_field, vllm, v_key)
