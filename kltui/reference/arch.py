"""The served model's architecture (`--arch llama|mamba|swa`) and its cache geometry, with the
config.json the server serves for it.

- `llama`: the shipped checkpoint as it is (dense attention; a radix hit restores KV per token).
- `mamba`: a recurrent block (reference/mamba.py) before the two attention layers. The radix
  cache keeps attention KV per token but the recurrent state only at checkpoints, as SGLang's
  Mamba radix cache does (reference/checkpoints.py). The served config.json uses Qwen3-Next's
  names (`layer_types` with "linear_attention"/"full_attention", `linear_conv_kernel_dim`,
  `linear_num_value_heads`, `linear_value_head_dim`, ...); `mamba_chunk_size` only when
  `--mamba-chunk-size` differs from 64 (Qwen3-Next checkpoints do not carry it and SGLang then
  uses FLA's 64).
- `swa`: sliding-window attention on alternate layers, gpt-oss's names (`sliding_window`,
  `layer_types` with "sliding_attention"/"full_attention"), layer 0 windowed.

Imports no torch: the CLI validates flags with it.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

ARCHS = ("llama", "mamba", "swa")
STRATEGIES = ("extra_buffer", "extra_buffer_lazy", "no_buffer")
FLA_CHUNK_SIZE = 64  # SGLang's default chunk when the model's config names none
CONV_KERNEL = 4  # the recurrent block's causal conv width
LINEAR_HEADS, LINEAR_HEAD_DIM = 2, 32  # its state: 2 value heads of 32 channels
FOLDER_FILES = ("model.safetensors", "tokenizer.json", "tokenizer_config.json")


@dataclass(frozen=True)
class Arch:
    """The architecture and its state settings, with SGLang's flag names."""

    name: str = "llama"
    page_size: int = 1
    mamba_chunk_size: int = FLA_CHUNK_SIZE
    mamba_track_interval: int = 256
    mamba_radix_cache_strategy: str = "extra_buffer"
    sliding_window: int = 128
    disable_cuda_graph: bool = False

    def problem(self) -> str | None:
        """One line saying why these settings cannot serve, or None."""
        if self.name not in ARCHS:
            return f"--arch must be one of {', '.join(ARCHS)}"
        if self.mamba_radix_cache_strategy not in STRATEGIES:
            return f"--mamba-radix-cache-strategy must be one of {', '.join(STRATEGIES)}"
        if self.name == "mamba":
            return self._mamba_problem()
        if self.name == "swa" and self.sliding_window < 1:
            return "--sliding-window must be at least 1"
        return None

    def _mamba_problem(self) -> str | None:
        p, c = self.page_size, self.mamba_chunk_size
        if c < 1 or self.mamba_track_interval < 1:
            return "--mamba-chunk-size and --mamba-track-interval must be at least 1"
        if max(c, p) % min(c, p):
            return f"--mamba-chunk-size {c} and --page-size {p}: one must divide the other"
        if self.mamba_track_interval % p:
            return f"--mamba-track-interval {self.mamba_track_interval} is not a multiple of --page-size {p}"
        if self.mamba_radix_cache_strategy == "no_buffer" and p != 1:
            return "--mamba-radix-cache-strategy no_buffer needs --page-size 1 (as SGLang)"
        return None

    @property
    def mamba(self) -> bool:
        return self.name == "mamba"

    @property
    def swa(self) -> bool:
        return self.name == "swa"

    @property
    def extra_buffer(self) -> bool:
        return self.mamba_radix_cache_strategy != "no_buffer"

    @property
    def chunk(self) -> int:
        """SGLang's mamba_cache_chunk_size: max(the model's chunk, page size); prefill saves
        the state at a multiple of it past the request's prefix."""
        return max(self.mamba_chunk_size, self.page_size)

    @property
    def track_grid(self) -> int:
        """SGLang's mamba_track_grid: decode saves the state where seq_len is a multiple."""
        return math.lcm(self.chunk, self.mamba_track_interval)

    @property
    def graphs(self) -> bool:
        """Whether decode steps replay a "captured CUDA graph" (mamba and swa only; the llama
        arch keeps its old answer, no graphs)."""
        return self.name != "llama" and not self.disable_cuda_graph

    def layer_types(self, attention_layers: int) -> list[str]:
        if self.mamba:
            return ["linear_attention"] + ["full_attention"] * attention_layers
        if self.swa:
            return [
                "sliding_attention" if i % 2 == 0 else "full_attention"
                for i in range(attention_layers)
            ]
        return ["full_attention"] * attention_layers

    def layer_windows(self, attention_layers: int) -> list[int | None]:
        """The sliding window of each attention layer (None: full attention)."""
        types = self.layer_types(attention_layers)[-attention_layers:]
        return [self.sliding_window if t == "sliding_attention" else None for t in types]

    def server_info_json(self) -> dict:
        """The /server_info keys SGLang reports for the state (beside the dense ones)."""
        info: dict = {
            "disable_cuda_graph": not self.graphs,
            "uses_mamba_radix_cache": self.mamba,
            "mamba_radix_cache_strategy": self.mamba_radix_cache_strategy if self.mamba else "auto",
            "mamba_track_interval": self.mamba_track_interval,
            "mamba_full_memory_ratio": 0.9,
            "mamba_backend": "triton",
            "linear_attn_backend": "triton",
            "swa_full_tokens_ratio": 0.8,
            "disable_hybrid_swa_memory": False,
        }
        return info

    def config_json(self, base: dict) -> dict:
        """config.json for the served model: the checkpoint's, with this arch's fields."""
        n = base["num_hidden_layers"]
        if self.name == "llama":
            return base
        out = dict(base)
        out["layer_types"] = self.layer_types(n)
        out["kltui_reference_arch"] = self.name
        if self.swa:
            out.update(architectures=["GptOssForCausalLM"], model_type="gpt_oss")
            out["sliding_window"] = self.sliding_window
            return out
        out.update(architectures=["Qwen3NextForCausalLM"], model_type="qwen3_next")
        out["num_hidden_layers"] = n + 1
        out["full_attention_interval"] = n + 1
        out.update(
            linear_conv_kernel_dim=CONV_KERNEL,
            linear_num_value_heads=LINEAR_HEADS,
            linear_num_key_heads=LINEAR_HEADS,
            linear_value_head_dim=LINEAR_HEAD_DIM,
            linear_key_head_dim=LINEAR_HEAD_DIM,
        )
        if self.mamba_chunk_size != FLA_CHUNK_SIZE:
            out["mamba_chunk_size"] = self.mamba_chunk_size
        return out

    def served_folder(self, checkpoint: Path) -> Path:
        """The folder /server_info names as model_path: the checkpoint itself for llama, else a
        folder with this arch's config.json beside links to the checkpoint's files, named by
        its content (`kltui-reference-<arch>-<sha>` in the temp folder) so that two servers of
        the same model name the same path, as two SGLang servers of one checkpoint do (kltui
        tells another model by its path). Made once, atomically, and kept: servers started at
        once share it, and none removes it from under another."""
        if self.name == "llama":
            return checkpoint
        base = json.loads((checkpoint / "config.json").read_text())
        text = json.dumps(self.config_json(base), indent=2) + "\n"
        key = hashlib.sha256((str(checkpoint.resolve()) + text).encode()).hexdigest()[:12]
        folder = Path(tempfile.gettempdir()) / f"kltui-reference-{self.name}-{key}"
        if (folder / "config.json").is_file():
            return folder
        staging = Path(tempfile.mkdtemp(prefix=f"kltui-reference-{self.name}-new-"))
        (staging / "config.json").write_text(text)
        for name in FOLDER_FILES:
            src = checkpoint / name
            if src.is_file():
                (staging / name).symlink_to(src.resolve())
        try:
            staging.rename(folder)
        except OSError:  # another server made it first: the same content
            shutil.rmtree(staging, ignore_errors=True)
        return folder
