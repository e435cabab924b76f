"""Both engines' settings in one spelling: dtypes, attention backends, CUDA graphs and flags as
SGLang's /server_info and kltui's vLLM identity report them, normalised so that the alignment
table (`alignment.py`) and the reference comparison (`reference.py`) compare like with like."""

from __future__ import annotations

from typing import Any

_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "torch.float32": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "torch.float16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "torch.bfloat16": "bfloat16",
}

# Both engines' names for the same attention kernels: SGLang's --attention-backend values and
# vLLM's AttentionBackendEnum names (FLASH_ATTN is FlashAttention 2 or 3, by GPU and setting).
_ATTENTION = {
    "fa3": "flash-attention",
    "fa4": "flash-attention",
    "flash_attn": "flash-attention",
    "triton_attn": "triton",
    "cpu_attn": "cpu",
    "intel_amx": "cpu",
    "flash_attention": "flash-attention",
    "flashinfer": "flashinfer",
    "triton": "triton",
    "torch_native": "torch-sdpa",
    "torch_sdpa": "torch-sdpa",
    "flex_attention": "flex-attention",
}


def norm_dtype(v: Any) -> str | None:
    """A dtype name in one spelling, or None when it is resolved only at load time."""
    if v is None:
        return None
    s = str(v).strip().lower()
    if s in ("", "auto", "none"):
        return None  # resolved from the checkpoint at load time: not comparable as given
    return _DTYPES.get(s, s)


# vLLM's /server_info (0.26) names the backend by its class path, e.g.
# "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend": the class, lowercased, without
# "Backend".
_ATTENTION_CLASSES = {
    "flashattention": "flash-attention",
    "tritonattention": "triton",
    "flashinfer": "flashinfer",
    "torchsdpa": "torch-sdpa",
    "cpuattention": "cpu",
    "flexattention": "flex-attention",
}


def norm_attention(v: Any) -> str | None:
    """An attention backend name in one spelling, or None when unset."""
    if v is None or str(v).strip() == "":
        return None
    s = str(v).strip().lower().replace("-", "_")
    if s.startswith("attentionbackendenum."):
        s = s.split(".", 1)[1]
    elif "." in s:
        cls = s.rsplit(".", 1)[1].removesuffix("backend").replace("_", "")
        return _ATTENTION_CLASSES.get(cls, s)
    return _ATTENTION.get(s, s)


_FA_VERSION = {"fa3": 3, "fa4": 4}


def attention_kernel(v: Any, fa_version: Any = None) -> tuple[str | None, int | None]:
    """(family, FlashAttention version) of a backend name: SGLang's "fa3" says 3 itself, vLLM's
    FLASH_ATTN needs its flash_attn_version (None: not reported)."""
    family = norm_attention(v)
    if family != "flash-attention":
        return family, None
    s = str(v).strip().lower().split(".")[-1]
    if s in _FA_VERSION:
        return family, _FA_VERSION[s]
    try:
        return family, int(fa_version) if fa_version is not None else None
    except (TypeError, ValueError):
        return family, None


def resolved_sglang(sglang: dict, cfg: dict) -> dict:
    """SGLang's settings with what it resolves from the checkpoint at load time filled in
    where its /server_info leaves them open: "dtype: auto" keeps a bf16 or fp16 checkpoint's
    dtype, and an unset context_length is the config's max_position_embeddings (when no RoPE
    scaling factor multiplies it). Anything else stays unresolved: unknown, never guessed."""
    out = dict(sglang)
    torch_dtype = norm_dtype(cfg.get("torch_dtype") or cfg.get("dtype"))
    if str(sglang.get("dtype")).lower() == "auto" and torch_dtype in ("bfloat16", "float16"):
        out["dtype_resolved"] = torch_dtype
    rope = cfg.get("rope_scaling")
    unscaled = rope is None or (
        isinstance(rope, dict) and "original_max_position_embeddings" in rope
    )
    length = cfg.get("max_position_embeddings")
    if sglang.get("context_length") is None and unscaled and isinstance(length, int):
        out["context_length_resolved"] = length
    return out


def sglang_attention(info: dict) -> Any:
    """The backend SGLang scores a prefill with: --prefill-attention-backend over
    --attention-backend (both resolved at startup, so /server_info names the one it runs)."""
    return info.get("prefill_attention_backend") or info.get("attention_backend")


def flag(v: Any) -> bool | None:
    """A boolean setting as either engine reports it (a bool, a number or "true"/"on"...), or
    None when it is not reported."""
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def sglang_cuda_graph(info: dict) -> bool | None:
    """True when SGLang replays CUDA graphs for decode (0.5.23 deprecates disable_cuda_graph for
    cuda_graph_backend_decode=disabled; either spelling turns them off)."""
    backend = info.get("cuda_graph_backend_decode")
    if backend is not None and str(backend).lower() == "disabled":
        return False
    disabled = info.get("disable_cuda_graph")
    if disabled is None:
        return None if backend is None else True
    return not disabled


def vllm_cuda_graph(info: dict) -> bool | None:
    """Whether vLLM runs with CUDA graphs, or None when it does not say."""
    eager = info.get("enforce_eager")
    mode = info.get("cudagraph_mode")
    if eager:
        return False
    # cudagraph_mode is serialized as the enum's value (0) or its name ("NONE")
    if mode is not None and (mode == 0 or str(mode).upper().split(".")[-1] == "NONE"):
        return False
    return None if eager is None and mode is None else True
