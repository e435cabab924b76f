"""A model's config.json, read for its state geometry: which layers keep a recurrent (Mamba /
linear-attention) state and with which chunk, which keep a sliding window, how many experts.

SGLang reads these from the checkpoint's config.json and reports none of them in /server_info
(it reports the Mamba cache's strategy and track interval, not the chunk size or the window).
The field names are those SGLang 0.5.23's own config classes read (`srt/configs/`):
- the Mamba chunk: `mamba_chunk_size` where the model defines one, else FLA's 64 for gated
  delta-net / KDA models (Qwen3-Next, Kimi-Linear); Nemotron-H reads `mamba_chunk_size`, else
  the older `chunk_size`, else 256; Granite-4.0-h and Falcon-H1 default to 256, Mamba2 reads
  `chunk_size`.
- the window: `sliding_window`, on the layers whose `layer_types` entry is
  "sliding_attention" (gpt-oss, Gemma), on every layer when there is no `layer_types`, and on
  none when `use_sliding_window` is false (Qwen2/Qwen3 carry a window they do not use).
- the experts: `num_experts` (Qwen), `num_local_experts` (Mixtral, gpt-oss),
  `n_routed_experts` (DeepSeek, Kimi), each with `num_experts_per_tok`.
A multimodal model's `text_config` is read first, as SGLang reads `hf_text_config`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kltui.engines.geometry import Experts, SlidingWindow, Source, Sourced

# The architectures SGLang 0.5.23 runs with its hybrid-Mamba radix cache
# (srt/arg_groups/overrides.py `_MAMBA_RADIX_CACHE_ARCHS`; Granite only with a "mamba" layer).
MAMBA_ARCHS = frozenset(
    {
        "KimiLinearForCausalLM",
        "KimiK3ForConditionalGeneration",
        "BailingMoeV2_5ForCausalLM",
        "BailingMoeV3ForCausalLM",
        "Qwen3NextForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM",
        "NemotronHForCausalLM",
        "NemotronHPuzzleForCausalLM",
        "FalconH1ForCausalLM",
        "JetNemotronForCausalLM",
        "Lfm2ForCausalLM",
        "GraniteMoeHybridForCausalLM",
    }
)
FLA_CHUNK_SIZE = 64  # sglang.kernels.ops.attention.fla.chunk_delta_h.CHUNK_SIZE
# SGLang's own default chunk for the architectures whose config class sets one
ARCH_CHUNK_DEFAULTS = {
    "NemotronHForCausalLM": 256,
    "NemotronHPuzzleForCausalLM": 256,
    "GraniteMoeHybridForCausalLM": 256,
    "FalconH1ForCausalLM": 256,
}
# Nemotron-H's older field and Mamba2's own name for the chunk
CHUNK_ALIASES = {
    "NemotronHForCausalLM": "chunk_size",
    "NemotronHPuzzleForCausalLM": "chunk_size",
    "Mamba2ForCausalLM": "chunk_size",
}
RECURRENT_LAYER_TYPES = frozenset({"linear_attention", "mamba"})
EXPERT_FIELDS = ("num_experts", "num_local_experts", "n_routed_experts")
# fields read here and the JSON type each must have (None allowed: "not set")
INT_FIELDS = (
    "sliding_window",
    "num_hidden_layers",
    "mamba_chunk_size",
    "chunk_size",
    "num_experts_per_tok",
    *EXPERT_FIELDS,
)


class ModelConfigError(Exception):
    """A config.json that cannot be read for its geometry: one line naming the file and field."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path


@dataclass(frozen=True)
class ModelConfig:
    """One model's config.json (its `text_config` merged over it) and where it came from."""

    path: str
    source: Source  # MODEL_CONFIG (found at the server's model path) or FLAG (--model-config)
    fields: Mapping[str, Any]

    @property
    def architecture(self) -> str | None:
        """The first of `architectures` (what SGLang picks the model class by)."""
        archs = self.fields.get("architectures")
        return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None

    @property
    def is_mamba(self) -> bool:
        """Whether SGLang runs this model with its hybrid-Mamba cache (if the cache is on)."""
        arch = self.architecture
        types = set(self.layer_types or ())
        if arch == "GraniteMoeHybridForCausalLM":
            return bool(types & RECURRENT_LAYER_TYPES)
        return arch in MAMBA_ARCHS or bool(types & RECURRENT_LAYER_TYPES)

    @property
    def layer_types(self) -> list[str] | None:
        """Each layer's type (`sliding_attention`, `linear_attention`, ...), None when unsaid."""
        lt = self.fields.get("layer_types")
        return lt if isinstance(lt, list) else None

    def mamba_chunk(self) -> Sourced:
        """The model's Mamba chunk as SGLang reads it, with where it came from."""
        arch = self.architecture or ""
        for name in ("mamba_chunk_size", CHUNK_ALIASES.get(arch)):
            value = self.fields.get(name) if name else None
            if isinstance(value, int):
                return Sourced(value, self.source)
        return Sourced(default_chunk(arch), Source.DEFAULT)

    def window(self, full_tokens_ratio: float | None = None) -> SlidingWindow | None:
        """The sliding window and the layers it is on, None without one."""
        size = self.fields.get("sliding_window")
        if not isinstance(size, int) or size <= 0 or self.fields.get("use_sliding_window") is False:
            return None
        n = self.fields.get("num_hidden_layers")
        types = self.layer_types
        if types is not None:
            layers = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
            if not layers:
                return None
        else:
            layers = tuple(range(n)) if isinstance(n, int) else ()
        n_layers = len(types) if types is not None else n if isinstance(n, int) else None
        return SlidingWindow(Sourced(size, self.source), layers, n_layers, full_tokens_ratio)

    def experts(self) -> Experts | None:
        """The routed experts and top-k, None for a dense MLP (0 or 1 expert)."""
        n = next((self.fields[f] for f in EXPERT_FIELDS if isinstance(self.fields.get(f), int)), 0)
        if n <= 1 or not self._has_moe_layer():
            return None
        top_k = self.fields.get("num_experts_per_tok")
        return Experts(n, top_k if isinstance(top_k, int) else None, self.source)

    def _has_moe_layer(self) -> bool:
        """Whether a layer routes to experts. A per-layer block list (Nemotron-H's
        `layers_block_type`, or its `hybrid_override_pattern`: M mamba, * attention, - MLP,
        E MoE) decides; transformers writes `n_routed_experts` 8 into every Nemotron-H config,
        MoE layers or not. Without such a list the expert count alone says."""
        blocks = self.fields.get("layers_block_type")
        if isinstance(blocks, list):
            return "moe" in blocks
        pattern = self.fields.get("hybrid_override_pattern")
        if isinstance(pattern, str):
            return "E" in pattern
        return True


def default_chunk(arch: str | None) -> int:
    """SGLang's Mamba chunk for an architecture whose config names none."""
    return ARCH_CHUNK_DEFAULTS.get(arch or "", FLA_CHUNK_SIZE)


def load_model_config(path: str | Path, source: Source) -> ModelConfig:
    """Read and check `path` (a config.json, or the folder holding one); ModelConfigError
    names the file and the field when it cannot be read."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    shown = str(p)
    try:
        raw = json.loads(p.read_bytes())
    except OSError as e:
        raise ModelConfigError(shown, f"cannot be read ({e.strerror or e})") from None
    except ValueError as e:
        raise ModelConfigError(shown, f"is not JSON ({e})") from None
    if not isinstance(raw, dict):
        raise ModelConfigError(shown, "is not a JSON object (a model's config.json is one)")
    text = raw.get("text_config")
    fields = {**raw, **text} if isinstance(text, dict) else raw
    _check_fields(shown, fields)
    return ModelConfig(shown, source, fields)


def _check_fields(path: str, fields: Mapping[str, Any]) -> None:
    for name in INT_FIELDS:
        v = fields.get(name)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ModelConfigError(path, f"field {name!r} is {v!r}, not a non-negative integer")
    for name in ("layer_types", "architectures"):
        v = fields.get(name)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise ModelConfigError(path, f"field {name!r} is not a list of strings")
    n, types = fields.get("num_hidden_layers"), fields.get("layer_types")
    if isinstance(n, int) and isinstance(types, list) and n != len(types):
        raise ModelConfigError(
            path, f"field 'layer_types' has {len(types)} entries for num_hidden_layers {n}"
        )


def local_config(model_path: str | None) -> ModelConfig | None:
    """The config.json in the server's model folder when this machine has it (a Hub id or a
    folder elsewhere: None); one that does not read is no geometry, not an error of the run."""
    if not model_path:
        return None
    p = Path(model_path) / "config.json"
    if not p.is_file():
        return None
    try:
        return load_model_config(p, Source.MODEL_CONFIG)
    except ModelConfigError:
        return None
