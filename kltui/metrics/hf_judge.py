"""An engine against the Hugging Face transformers reference (`hf_reference`): what must match
before the numbers mean anything, and what the reference's margins say about each top-1 flip.

The per-position figures are `kltui.metrics.cross`'s, with the engine as side A and the
reference as side B (so union_kl is KL(reference || engine)). The reference holds the whole
vocabulary: kltui asks it for the engine's top-k at every position and asks the engine (SGLang's
`token_ids_logprob`) for the reference's, so every id of the union is kept on both sides and
the union KL is the exact KL of the two distributions over that partition, not the lower bound
that two top-k lists give (`union_exact`; vLLM cannot be asked for chosen ids at prompt
positions, so its union KL against the reference stays a lower bound).

Flips: at a top-1 disagreement, the reference's own top-1/top-2 margin says how close to a tie
the model as written is. Under `FLIP_MARGIN_LINE` (0.7 nats) a rounding-level difference can
tip the argmax: expected noise. At or above it no rounding can: the engine computes another
function there (a bug, or another dtype). `reference_flips` counts both and the share of flips
that are near a tie.

`align_reference(engine, ref)` is the config diff: the engine's reported settings beside the
reference's (dtype, attention implementation, device, weights), each row with a status and a
severity as in `kltui.metrics.alignment`; `weights_state` is the same-weights check that the
runner refuses on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kltui.metrics.alignment import (
    MATCH,
    MISMATCH,
    REFUSE,
    UNKNOWN,
    WARN,
    RowStatus,
    Severity,
    model_names,
)
from kltui.metrics.cross import FLIP_MARGIN_LINE, CrossPositions
from kltui.metrics.engine_settings import norm_dtype, sglang_attention

PLACEHOLDER_VERSIONS = ("", "default")


@dataclass(frozen=True, slots=True)
class WidestFlip:
    """The flip where the reference was surest of its own top-1."""

    sample: int
    position: int
    margin: float

    def to_json(self) -> dict[str, Any]:
        """{"sample", "position", "margin"}."""
        return {"sample": self.sample, "position": self.position, "margin": self.margin}


@dataclass(frozen=True, slots=True)
class RefFlips:
    """The top-1 flips of a run judged by the reference's margin (`reference_flips`)."""

    line: float
    flips: int = 0
    near_tie: int = 0  # the reference's margin under the line: rounding can tip it
    wide: int = 0  # at or above the line: not rounding
    margin_unknown: int = 0
    near_tie_share: float | None = None  # near_tie over the flips with a known margin
    widest: WidestFlip | None = None

    def to_json(self) -> dict[str, Any]:
        """The summary's `reference_flips`."""
        return {
            "line": self.line,
            "flips": self.flips,
            "near_tie": self.near_tie,
            "wide": self.wide,
            "margin_unknown": self.margin_unknown,
            "near_tie_share": self.near_tie_share,
            "widest": None if self.widest is None else self.widest.to_json(),
        }


def reference_flips(
    samples: list[tuple[int, CrossPositions]], *, line: float = FLIP_MARGIN_LINE
) -> RefFlips:
    """Every top-1 flip judged by the reference's margin (side B): how many are near a tie
    (margin < line), how many are not (>= line: not rounding), and the share near a tie."""
    parts = [(s, c) for s, c in samples if c.flip is not None and c.n]
    if not parts:
        return RefFlips(line)
    flip = np.concatenate([c.flip for _, c in parts])
    if not flip.any():
        return RefFlips(line)
    mb = np.concatenate([c.margin_b for _, c in parts])[flip]
    sample = np.concatenate([np.full(c.n, s, dtype=np.int64) for s, c in parts])[flip]
    pos = np.concatenate([np.arange(c.n, dtype=np.int64) for _, c in parts])[flip]
    known = ~np.isnan(mb)
    near_tie = int((mb[known] < line).sum())
    share, widest = None, None
    if known.any():
        share = near_tie / int(known.sum())
        j = int(np.nanargmax(mb))
        widest = WidestFlip(int(sample[j]), int(pos[j]), float(mb[j]))
    return RefFlips(
        line,
        flips=int(flip.sum()),
        near_tie=near_tie,
        wide=int((mb[known] >= line).sum()),
        margin_unknown=int((~known).sum()),
        near_tie_share=share,
        widest=widest,
    )


@dataclass(frozen=True, slots=True)
class RefRow:
    """One setting of the engine beside the reference's."""

    key: str
    label: str
    engine: Any
    reference: Any
    status: RowStatus
    severity: Severity
    why: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object."""
        return asdict(self)


def _short(h: object) -> str:
    return f"{str(h)[:12]}…"


def weights_state(engine: dict, ref: dict) -> tuple[str, str]:
    """("same" | "different" | "unverified", why) for the engine's weights against the
    reference folder's: a hash the engine reports, else the hash kltui took of the engine's
    folder on this machine, against the reference folder's; without either, the names (a
    different name is another model; the same name is unverified)."""
    rh = ref.get("local_weights_sha256")
    for key, what in (
        ("weights_sha256", "reported by the server"),
        ("local_weights_sha256", "of its folder on this machine"),
    ):
        eh = engine.get(key)
        if eh is not None and rh is not None:
            if eh != rh:
                return (
                    "different",
                    f"the config.json and *.safetensors differ: sha256 {_short(eh)} ({what}) vs "
                    f"{_short(rh)} (the reference folder)",
                )
            return "same", f"the same config.json and *.safetensors, sha256 {_short(rh)}"
    en = model_names(engine.get("model_path"), engine.get("served_model_name"))
    rn = model_names(ref.get("model_path"))
    if en and rn and not en & rn:
        return (
            "different",
            f"model_path {engine.get('model_path')} vs the reference folder {ref.get('model_path')}"
            " (and no weights hash to show they are the same files)",
        )
    why = engine.get("local_weights_note") or "no weights hash"
    if rh is None:
        why = ref.get("local_weights_note") or "the reference folder was not hashed"
    return "unverified", f"same model name, weights not verified: {why}"


def _cmp(a: Any, b: Any) -> RowStatus:
    if a is None or b is None:
        return UNKNOWN
    return MATCH if a == b else MISMATCH


def engine_dtype(engine: dict) -> str | None:
    """The dtype an engine reports, in one spelling (None: unknown or 'auto')."""
    return norm_dtype(engine.get("dtype"))


def align_reference(engine: dict, ref: dict, *, engine_name: str = "SGLang") -> list[RefRow]:
    """The config diff of an engine (its identity record) against the reference's."""
    return (
        _function_rows(engine, ref)
        + _arithmetic_rows(engine, ref, engine_name)
        + _recorded_rows(engine, ref)
    )


def _function_rows(engine: dict, ref: dict) -> list[RefRow]:
    """What decides the function both compute: the weights, the dtype, the vocabulary."""
    rows: list[RefRow] = []
    state, why = weights_state(engine, ref)
    rows.append(
        RefRow(
            "weights",
            "weights (config.json + *.safetensors)",
            engine.get("local_weights_sha256")
            or engine.get("weights_sha256")
            or engine.get("model_path"),
            ref.get("local_weights_sha256") or ref.get("model_path"),
            {"same": MATCH, "different": MISMATCH}.get(state, UNKNOWN),
            REFUSE,
            "a reference with other weights computes another function",
            why,
        )
    )
    e_dt, r_dt = engine_dtype(engine), norm_dtype(ref.get("dtype"))
    rows.append(
        RefRow(
            "dtype",
            "dtype",
            engine.get("dtype"),
            ref.get("dtype"),
            _cmp(e_dt, r_dt),
            WARN,
            "the numbers then compare dtypes as much as engines: bf16 rounds every op at 8 bits "
            "of mantissa, fp32 at 24",
            "the engine's 'auto' is resolved from the checkpoint" if e_dt is None else "",
        )
    )
    ev, rv = engine.get("vocab_size"), ref.get("vocab_size")
    if ev is not None:
        rows.append(
            RefRow(
                "vocab_size",
                "vocabulary size",
                ev,
                rv,
                _cmp(ev, rv),
                REFUSE,
                "teacher forcing sends ids: another vocabulary makes them other tokens",
            )
        )
    return rows


def _arithmetic_rows(engine: dict, ref: dict, engine_name: str) -> list[RefRow]:
    """How the engine computes it beside the reference: attention kernel, tensor parallelism,
    quantized weights and KV cache."""
    rows: list[RefRow] = []
    e_dt = engine_dtype(engine)
    att = sglang_attention(engine) if engine_name == "SGLang" else engine.get("attention_backend")
    rows.append(
        RefRow(
            "attention",
            "attention implementation",
            att,
            ref.get("attn_implementation"),
            RowStatus.INFO,
            Severity.INFO,
            "never the same kernel: the engine's paged attention against transformers' "
            "(sdpa, eager or flash); their accumulation order differs",
        )
    )
    e_tp = engine.get("tp_size")
    rows.append(
        RefRow(
            "tp",
            "tensor parallel size",
            e_tp,
            1,
            _cmp(e_tp, 1),
            WARN,
            "the reference runs on one device; tp > 1 adds all-reduce rounding on the engine",
        )
    )
    e_q = engine.get("quantization")
    rows.append(
        RefRow(
            "quantization",
            "quantization",
            e_q,
            None,
            MISMATCH if e_q else (MATCH if "quantization" in engine else UNKNOWN),
            WARN,
            "quantized weights on the engine are other weights than the reference's",
        )
    )
    kv = engine.get("kv_cache_dtype")
    kv_dt = norm_dtype(kv)
    rows.append(
        RefRow(
            "kv_cache_dtype",
            "KV cache dtype",
            kv,
            "model dtype",
            UNKNOWN if kv is None else (MATCH if kv_dt in (None, e_dt) else MISMATCH),
            WARN,
            "a quantized KV cache changes every attention output",
            "'auto' means the model dtype",
        )
    )
    return rows


def _recorded_rows(engine: dict, ref: dict) -> list[RefRow]:
    """Recorded, never judged: the device, the batching and the versions."""
    rows: list[RefRow] = []
    rows.append(
        RefRow(
            "device",
            "device",
            engine.get("device"),
            ref.get("device"),
            RowStatus.INFO,
            Severity.INFO,
            "recorded: CPU and GPU kernels round differently",
        )
    )
    rows.append(
        RefRow(
            "batch",
            "sequences per forward",
            "the engine's own batching",
            ref.get("batch_size"),
            RowStatus.INFO,
            Severity.INFO,
            "1: every reference forward holds one sequence, no padding, no batch effects",
        )
    )
    rows.append(
        RefRow(
            "version",
            "version",
            engine.get("version"),
            ref.get("version"),
            RowStatus.INFO,
            Severity.INFO,
            "recorded so a result can be tied to the releases that produced it",
        )
    )
    return rows


def dtype_pair(rows: list[RefRow]) -> tuple[Any, Any] | None:
    """(engine dtype, reference dtype) when the config diff shows them different, else None."""
    for r in rows:
        if r.key == "dtype" and r.status == MISMATCH:
            return r.engine, r.reference
    return None


def ref_mismatches(rows: list[RefRow]) -> list[RefRow]:
    """Rows that differ, info rows left out."""
    return [r for r in rows if r.status == MISMATCH and r.severity != Severity.INFO]


def describe_ref(row: RefRow, engine_name: str = "SGLang") -> str:
    """One line for a Problem."""
    note = f" ({row.note})" if row.note else ""
    return (
        f"{row.label} differs: {engine_name} {row.engine!r} vs the HF reference "
        f"{row.reference!r}; {row.why}{note}"
    )
