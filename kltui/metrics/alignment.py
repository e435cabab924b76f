"""Configuration alignment: what must match between an SGLang server and a vLLM baseline before
their logprobs are worth comparing (the vLLM-to-SGLang migration checklist, made mechanical).

`align(sglang, vllm)` is a pure function over two identity dicts: SGLang's `/server_info` (plus
`/model_info` keys) and the `record()` of what `kltui.engines.vllm.VLLMClient.identify` returns. Each row holds
both values, a status (`match`, `mismatch`, `unknown` when either side does not report it, or
`info`), a severity (`refuse`: comparing would be meaningless; `warn`: numbers would partly
measure the setting; `info`), and why it matters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MATCH, MISMATCH, UNKNOWN, INFO = "match", "mismatch", "unknown", "info"
REFUSE, WARN = "refuse", "warn"


@dataclass(frozen=True, slots=True)
class Row:
    """One setting compared between the SGLang server and the vLLM baseline."""

    key: str
    label: str
    sglang: Any
    vllm: Any
    status: str
    severity: str
    why: str
    note: str = ""

    def to_dict(self) -> dict:
        """The row as a JSON object."""
        return asdict(self)


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

# Both engines' names for the same attention kernels.
_ATTENTION = {
    "fa3": "flash-attention",
    "fa4": "flash-attention",
    "flash_attn": "flash-attention",
    "flash_attention": "flash-attention",
    "flashinfer": "flashinfer",
    "triton": "triton",
    "triton_attn": "triton",
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


def norm_attention(v: Any) -> str | None:
    """An attention backend name in one spelling, or None when unset."""
    if v is None or str(v).strip() == "":
        return None
    s = str(v).strip().lower().replace("-", "_")
    if s.startswith("attentionbackendenum."):
        s = s.split(".", 1)[1]
    return _ATTENTION.get(s, s)


def model_names(path: Any, served: Any = None) -> set[str]:
    """Comparable names of a model: its path or hub id and served name, by their last part."""
    out = set()
    for v in (path, served):
        if isinstance(v, str) and v.strip():
            out.add(v.strip().rstrip("/").split("/")[-1].lower())
    return out


def _bool(v: Any) -> bool | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def _compare(a: Any, b: Any) -> str:
    if a is None or b is None:
        return UNKNOWN
    return MATCH if a == b else MISMATCH


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


def align(
    sglang: dict,
    vllm: dict,
    *,
    top_k: int = 5,
    tokenizer_probe: bool | None = None,
) -> list[Row]:
    """The side-by-side table. `tokenizer_probe`: whether both servers tokenized the same probe
    text to the same ids (None when it could not be run)."""
    rows: list[Row] = []

    s_names = model_names(sglang.get("model_path"), sglang.get("served_model_name"))
    v_names = model_names(vllm.get("model_path"), vllm.get("served_model_name"))
    if not s_names or not v_names:
        status = UNKNOWN
    else:
        status = MATCH if s_names & v_names else MISMATCH
    rows.append(
        Row(
            "model",
            "model (path or name)",
            sglang.get("model_path"),
            vllm.get("model_path") or vllm.get("served_model_name"),
            status,
            REFUSE,
            "different weights make every other number meaningless",
            "compared by the last path component, so a hub id and a local copy of it match",
        )
    )

    s_hash = sglang.get("weights_sha256")
    v_hash = vllm.get("weights_sha256")
    rows.append(
        Row(
            "weights",
            "weights hash / version",
            s_hash or sglang.get("weight_version"),
            v_hash,
            _compare(s_hash, v_hash),
            REFUSE,
            "only a weights hash proves both servers load the same tensors (the guide: SHA256 "
            "of the exported weights must agree)",
            "neither server API reports a weights hash; check the files by hand"
            if s_hash is None or v_hash is None
            else "",
        )
    )

    s_dt, v_dt = norm_dtype(sglang.get("dtype")), norm_dtype(vllm.get("dtype"))
    rows.append(
        Row(
            "dtype",
            "dtype",
            sglang.get("dtype"),
            vllm.get("dtype"),
            _compare(s_dt, v_dt),
            WARN,
            "fp16 and bf16 round differently; a dtype mismatch alone shifts logprobs far more "
            "than kernel differences",
            "'auto' is resolved from the checkpoint and cannot be compared as configured"
            if (sglang.get("dtype") == "auto" or vllm.get("dtype") == "auto")
            else "",
        )
    )

    s_len = sglang.get("context_length") or sglang.get("max_model_len")
    v_len = vllm.get("max_model_len")
    rows.append(
        Row(
            "max_model_len",
            "max model length",
            s_len,
            v_len,
            _compare(s_len, v_len),
            WARN,
            "some models scale RoPE by the configured length, and prompts must fit both servers",
        )
    )

    probe_status = {True: MATCH, False: MISMATCH, None: UNKNOWN}[tokenizer_probe]
    rows.append(
        Row(
            "vocabulary",
            "tokenizer (probe text -> same ids)",
            sglang.get("tokenizer_path") or sglang.get("model_path"),
            vllm.get("tokenizer") or vllm.get("model_path"),
            probe_status,
            REFUSE,
            "teacher forcing sends token ids: with another vocabulary the same ids are other "
            "tokens",
        )
    )

    s_tp, v_tp = sglang.get("tp_size"), vllm.get("tp_size")
    rows.append(
        Row(
            "tp",
            "tensor parallel size",
            s_tp,
            v_tp,
            _compare(s_tp, v_tp),
            WARN,
            "all-reduce order differs with tp; the guide: compare on one GPU first",
        )
    )

    s_att, v_att = sglang.get("attention_backend"), vllm.get("attention_backend")
    rows.append(
        Row(
            "attention_backend",
            "attention backend",
            s_att,
            v_att,
            _compare(norm_attention(s_att), norm_attention(v_att)),
            WARN,
            "different attention kernels accumulate in a different order; pin the same family "
            "where both engines have it",
        )
    )

    s_cg, v_cg = sglang_cuda_graph(sglang), vllm_cuda_graph(vllm)
    rows.append(
        Row(
            "cuda_graph",
            "CUDA graphs (off = eager)",
            s_cg,
            v_cg,
            _compare(s_cg, v_cg),
            WARN,
            "graph capture and torch.compile fuse ops and change the order of arithmetic",
        )
    )

    s_det = _bool(sglang.get("enable_deterministic_inference"))
    v_det = _bool(vllm.get("batch_invariant"))
    rows.append(
        Row(
            "deterministic",
            "deterministic / batch-invariant",
            s_det,
            v_det,
            _compare(s_det, v_det),
            WARN,
            "batch-invariant kernels change reduction order on one side only",
        )
    )

    s_pc = sglang.get("disable_radix_cache")
    s_pc = None if s_pc is None else not _bool(s_pc)
    v_pc = _bool(vllm.get("enable_prefix_caching"))
    rows.append(
        Row(
            "prefix_caching",
            "prefix caching",
            s_pc,
            v_pc,
            _compare(s_pc, v_pc),
            WARN,
            "teacher-forced scoring bypasses both caches, but greedy generations can be served "
            "from cached prefixes on one side only",
        )
    )

    s_raw, v_raw = sglang.get("kv_cache_dtype"), vllm.get("kv_cache_dtype")
    if s_raw == "auto" and v_raw == "auto":
        kv_status = MATCH  # both follow the model dtype, compared in its own row
    else:
        kv_status = _compare(norm_dtype(s_raw) or s_dt, norm_dtype(v_raw) or v_dt)
    rows.append(
        Row(
            "kv_cache_dtype",
            "KV cache dtype",
            s_raw,
            v_raw,
            kv_status,
            WARN,
            "a quantized KV cache on one side changes every attention output",
            "'auto' means the model dtype",
        )
    )

    s_q = sglang.get("quantization") if "quantization" in sglang else None
    v_q = vllm.get("quantization") if "quantization" in vllm else None
    known_q = "quantization" in sglang and "quantization" in vllm
    rows.append(
        Row(
            "quantization",
            "quantization",
            s_q,
            v_q,
            (MATCH if s_q == v_q else MISMATCH) if known_q else UNKNOWN,
            WARN,
            "quantized weights on one side are different weights",
        )
    )

    mode = vllm.get("logprobs_mode")
    if mode is None:
        mode_status = UNKNOWN
    else:
        mode_status = MATCH if str(mode) == "raw_logprobs" else MISMATCH
    rows.append(
        Row(
            "logprobs_mode",
            "vLLM --logprobs-mode",
            "raw (input logprobs are never scaled)",
            mode,
            mode_status,
            WARN,
            "SGLang's prompt logprobs are raw log-softmax; vLLM must report raw_logprobs too "
            "(processed_* apply temperature/top-k, *_logits are not logprobs at all)",
        )
    )

    max_lp = vllm.get("max_logprobs")
    if max_lp is None:
        lp_status = UNKNOWN
    else:
        lp_status = MATCH if int(max_lp) == -1 or int(max_lp) >= top_k else MISMATCH
    rows.append(
        Row(
            "max_logprobs",
            "vLLM --max-logprobs >= top-k",
            f"top-k {top_k}",
            max_lp,
            lp_status,
            WARN,
            f"vLLM answers HTTP 400 to prompt_logprobs={top_k} above its --max-logprobs",
        )
    )

    rows.append(
        Row(
            "version",
            "engine version",
            sglang.get("version"),
            vllm.get("version"),
            INFO,
            INFO,
            "recorded so a result can be tied to the releases that produced it",
        )
    )
    return rows


def mismatches(rows: list[Row]) -> list[Row]:
    """The rows whose values differ."""
    return [r for r in rows if r.status == MISMATCH]


def refusals(rows: list[Row]) -> list[Row]:
    """The mismatched rows that make a comparison meaningless."""
    return [r for r in rows if r.status == MISMATCH and r.severity == REFUSE]


def describe(row: Row) -> str:
    """One line for a Problem: what differs and why it matters."""
    note = f" ({row.note})" if row.note else ""
    return f"{row.label} differs: SGLang {row.sglang!r} vs vLLM {row.vllm!r}; {row.why}{note}"
