"""A Llama decoder in plain torch (float32, CPU) that loads an HF Llama checkpoint folder.

The module tree mirrors HF's `LlamaForCausalLM`, so `state_dict()` keys are the HF names and the
same `model.safetensors` loads here, in transformers, in SGLang and in vLLM.

Two serving kernels share every weight and every formula:
- `forward_batched` stacks all rows of a step (every prefill token of every request, or one row
  per decoding request) into one matmul per linear layer, as a real server does. BLAS picks its
  kernel by the number of rows, so a token's logits depend on the batch shape in the last bits.
- `forward_rowwise` pushes each row through the network on its own with the same shapes whether
  it is a prefill row or a decode row, so its result cannot depend on the batch: prefill and
  decode logprobs come out bit-identical (SGLang's `--enable-deterministic-inference`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class LlamaConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    head_dim: int = 0
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None

    def __post_init__(self) -> None:
        if self.head_dim == 0:
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_attention_heads)
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")

    @classmethod
    def from_dict(cls, raw: dict) -> LlamaConfig:
        if raw.get("model_type", "llama") != "llama":
            raise ValueError(f"not a Llama checkpoint (model_type={raw.get('model_type')!r})")
        scaling = raw.get("rope_scaling")
        if scaling and scaling.get("rope_type", scaling.get("type")) not in (None, "default"):
            raise ValueError(f"rope_scaling {scaling!r} is not supported by the reference model")
        return cls(
            vocab_size=raw["vocab_size"],
            hidden_size=raw["hidden_size"],
            intermediate_size=raw["intermediate_size"],
            num_hidden_layers=raw["num_hidden_layers"],
            num_attention_heads=raw["num_attention_heads"],
            num_key_value_heads=raw.get("num_key_value_heads", raw["num_attention_heads"]),
            max_position_embeddings=raw.get("max_position_embeddings", 2048),
            rms_norm_eps=raw.get("rms_norm_eps", 1e-6),
            rope_theta=raw.get("rope_theta", 10000.0),
            tie_word_embeddings=raw.get("tie_word_embeddings", False),
            head_dim=raw.get("head_dim") or 0,
            bos_token_id=raw.get("bos_token_id"),
            eos_token_id=raw.get("eos_token_id"),
            pad_token_id=raw.get("pad_token_id"),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> LlamaConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_config_json(self) -> dict:
        """config.json as transformers' LlamaConfig writes it (what SGLang and vLLM read)."""
        return {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "max_position_embeddings": self.max_position_embeddings,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "rope_scaling": None,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "mlp_bias": False,
            "pretraining_tp": 1,
            "initializer_range": 0.02,
            "tie_word_embeddings": self.tie_word_embeddings,
            "torch_dtype": "float32",
            "use_cache": True,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
        }

    @property
    def eos_ids(self) -> tuple[int, ...]:
        if self.eos_token_id is None:
            return ()
        if isinstance(self.eos_token_id, int):
            return (self.eos_token_id,)
        return tuple(self.eos_token_id)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Same order of operations as HF's LlamaRMSNorm, so float32 results agree to the ulp.
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        h, d = cfg.hidden_size, cfg.head_dim
        self.q_proj = nn.Linear(h, cfg.num_attention_heads * d, bias=False)
        self.k_proj = nn.Linear(h, cfg.num_key_value_heads * d, bias=False)
        self.v_proj = nn.Linear(h, cfg.num_key_value_heads * d, bias=False)
        self.o_proj = nn.Linear(cfg.num_attention_heads * d, h, bias=False)


class MLP(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class Body(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


def rope_tables(cfg: LlamaConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin for every position, computed once so a position's row never depends on a batch."""
    d = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    pos = torch.arange(cfg.max_position_embeddings, dtype=torch.float32)
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [rows, heads, head_dim]; cos/sin: [rows, head_dim] (HF's rotate_half convention)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


@dataclass
class Segment:
    """One request's rows in a step: new tokens at positions [start, start + count).

    `kv` is the request's cache, shaped [layers, 2, capacity, kv_heads, head_dim]; positions below
    `start` already hold keys and values. `window`, when set, limits each query to the keys of
    the last `window` positions (used only by the planted window-evict fault). `floor`, when
    set, hides the keys below it (the planted chunk-boundary fault: a chunk that lost the state
    of the chunks before it).

    The stateful archs add: `state`, the request's recurrent state (reference/mamba.py),
    advanced in place; `snap_at`, sequence lengths whose state to save (length -> the length
    it is saved as) into `snaps`; `evict_page`, when set, the planted swa-early-evict fault: a
    decode row on a window layer loses the page its window starts in.
    """

    kv: torch.Tensor
    start: int
    count: int
    window: int | None = None
    floor: int = 0
    state: Any = None
    snap_at: dict[int, int] = field(default_factory=dict)
    snaps: dict[int, Any] = field(default_factory=dict)
    evict_page: int = 0


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = Body(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.scaling = cfg.head_dim**-0.5
        self.group = cfg.num_attention_heads // cfg.num_key_value_heads
        # --arch swa: the sliding window of each attention layer (None: full attention)
        self.layer_windows: list[int | None] = [None] * cfg.num_hidden_layers
        self.recurrent: nn.Module | None = None  # --arch mamba: reference/mamba.py's block

    # ---- the pieces every path shares ----

    def _qkv(self, layer: DecoderLayer, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """Normed, projected, rotated q, k and v for rows x [rows, hidden]: [rows, heads, d]."""
        cfg, attn = self.config, layer.self_attn
        h = layer.input_layernorm(x)
        q = apply_rope(attn.q_proj(h).view(-1, cfg.num_attention_heads, cfg.head_dim), cos, sin)
        k = apply_rope(attn.k_proj(h).view(-1, cfg.num_key_value_heads, cfg.head_dim), cos, sin)
        v = attn.v_proj(h).view(-1, cfg.num_key_value_heads, cfg.head_dim)
        return q, k, v

    def _residual(self, layer: DecoderLayer, x: torch.Tensor, attended: torch.Tensor):
        x = x + layer.self_attn.o_proj(attended)
        return x + layer.mlp(layer.post_attention_layernorm(x))

    def _attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        start: int,
        window: int | None = None,
    ) -> torch.Tensor:
        """Causal attention of q [heads, count, d] at positions start.. over k, v [kv, keys, d].

        Keys run from position start + count - keys, so with a window of a single decode row the
        caller passes only the last `window` keys. Returns [count, heads * d].
        """
        count, n_keys = q.shape[1], k.shape[1]
        if self.group > 1:
            k = k.repeat_interleave(self.group, dim=0)
            v = v.repeat_interleave(self.group, dim=0)
        scores = torch.matmul(q, k.transpose(1, 2)) * self.scaling
        if count > 1:
            end = start + count
            qpos = torch.arange(start, end)[:, None]
            kpos = torch.arange(end - n_keys, end)[None, :]
            allowed = kpos <= qpos
            if window is not None:
                allowed &= kpos > qpos - window
            scores = scores.masked_fill(~allowed, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        return torch.matmul(probs, v).transpose(0, 1).reshape(count, -1)

    def _window(self, s: Segment, li: int) -> int | None:
        """The window of layer li for segment s: the layer's own (--arch swa) and the planted
        window-evict fault's, whichever is narrower."""
        own = self.layer_windows[li]
        if s.window is None or own is None:
            return own if s.window is None else s.window
        return min(own, s.window)

    def _lo(self, s: Segment, li: int, pos: int) -> int:
        """The first key position a query at pos reads on layer li."""
        window = self._window(s, li)
        lo = 0 if window is None else max(0, pos + 1 - window)
        if s.evict_page and self.layer_windows[li] is not None and lo > 0 and s.count == 1:
            # swa-early-evict: the page holding the window's first key was freed already
            lo = min(pos, (lo // s.evict_page + 1) * s.evict_page)
        return max(lo, s.floor)

    def _recur_batched(self, x: torch.Tensor, segments: Sequence[Segment]) -> torch.Tensor:
        if self.recurrent is None:
            return x
        outs, row = [], 0
        for s in segments:
            y, snaps = self.recurrent.batched(x[row : row + s.count], s.state, s.snap_at, s.start)
            s.snaps.update(snaps)
            outs.append(y)
            row += s.count
        return torch.cat(outs)

    def _recur_rows(self, rows: list[torch.Tensor], where: list[tuple[Segment, int]]) -> None:
        if self.recurrent is None:
            return
        for i, (s, pos) in enumerate(where):
            rows[i] = self.recurrent.row(rows[i], s.state)
            if pos + 1 in s.snap_at:
                s.snaps[s.snap_at[pos + 1]] = s.state.clone()

    # ---- training / reference: one full causal sequence per batch row ----

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits [batch, seq, vocab] for token ids [batch, seq] starting at position 0."""
        b, t = input_ids.shape
        x = self.model.embed_tokens(input_ids).view(b * t, -1)
        cos, sin = self.rope_cos[:t].repeat(b, 1), self.rope_sin[:t].repeat(b, 1)
        for layer in self.model.layers:
            q, k, v = self._qkv(layer, x, cos, sin)
            q, k, v = (z.view(b, t, -1, z.shape[-1]).transpose(1, 2) for z in (q, k, v))
            attended = torch.cat([self._attend(q[i], k[i], v[i], 0) for i in range(b)])
            x = self._residual(layer, x, attended)
        return self.lm_head(self.model.norm(x)).view(b, t, -1)

    # ---- serving ----

    def new_kv(self, capacity: int) -> torch.Tensor:
        cfg = self.config
        return torch.zeros(
            cfg.num_hidden_layers,
            2,
            capacity,
            cfg.num_key_value_heads,
            cfg.head_dim,
            dtype=self.lm_head.weight.dtype,
        )

    @torch.inference_mode()
    def forward_batched(self, token_ids: torch.Tensor, segments: Sequence[Segment]) -> torch.Tensor:
        """Hidden states after the final norm for the stacked rows of all segments.

        token_ids [rows] is the concatenation of every segment's new tokens. Keys and values of
        the new rows are written into each segment's kv cache as a side effect.
        """
        positions = torch.cat([torch.arange(s.start, s.start + s.count) for s in segments])
        cos, sin = self.rope_cos[positions], self.rope_sin[positions]
        x = self._recur_batched(self.model.embed_tokens(token_ids), segments)
        for li, layer in enumerate(self.model.layers):
            q, k, v = self._qkv(layer, x, cos, sin)
            outs, row = [], 0
            for s in segments:
                end = s.start + s.count
                s.kv[li, 0, s.start : end] = k[row : row + s.count]
                s.kv[li, 1, s.start : end] = v[row : row + s.count]
                window = self._window(s, li)
                lo = self._lo(s, li, end - 1) if s.count == 1 else s.floor
                outs.append(
                    self._attend(
                        q[row : row + s.count].transpose(0, 1),
                        s.kv[li, 0, lo:end].transpose(0, 1),
                        s.kv[li, 1, lo:end].transpose(0, 1),
                        s.start,
                        window,
                    )
                )
                row += s.count
            x = self._residual(layer, x, torch.cat(outs))
        return self.model.norm(x)

    @torch.inference_mode()
    def forward_rowwise(self, token_ids: torch.Tensor, segments: Sequence[Segment]) -> torch.Tensor:
        """Same contract as forward_batched, computed one row at a time in a fixed shape.

        Every row travels as its own freshly allocated [1, hidden] tensor, and attention for a
        row multiplies a fresh [heads, 1, d] query by fresh contiguous [kv, positions, d] keys:
        no view into a batch, so no alignment or stride differs between a prefill row and a
        decode row. Rows of one segment go in position order, so each row finds the keys of the
        rows before it already written.
        """
        rows: list[torch.Tensor] = []
        where: list[tuple[Segment, int]] = []
        ids = token_ids.tolist()
        for s in segments:
            for j in range(s.count):
                rows.append(self.model.embed_tokens.weight[ids[len(where)]].clone()[None, :])
                where.append((s, s.start + j))
        self._recur_rows(rows, where)
        for li, layer in enumerate(self.model.layers):
            for i, (s, pos) in enumerate(where):
                cos = self.rope_cos[pos : pos + 1].clone()
                sin = self.rope_sin[pos : pos + 1].clone()
                q, k, v = self._qkv(layer, rows[i], cos, sin)
                s.kv[li, 0, pos] = k[0]
                s.kv[li, 1, pos] = v[0]
                lo = self._lo(s, li, pos)
                attended = self._attend(
                    q.transpose(0, 1).contiguous(),
                    s.kv[li, 0, lo : pos + 1].transpose(0, 1).contiguous(),
                    s.kv[li, 1, lo : pos + 1].transpose(0, 1).contiguous(),
                    pos,
                )
                rows[i] = self._residual(layer, rows[i], attended)
        return torch.cat([self.model.norm(x) for x in rows])

    @torch.inference_mode()
    def logits_batched(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden)

    @torch.inference_mode()
    def logits_rowwise(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.lm_head(hidden[i : i + 1].clone()) for i in range(hidden.shape[0])])


DTYPES = {
    "auto": torch.float32,
    "float32": torch.float32,
    "float": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "half": torch.float16,
}


def dtype_name(name: str) -> str:
    """SGLang's --dtype spelling as /server_info reports it ("half" -> "float16")."""
    return str(DTYPES[name]).removeprefix("torch.")


def load_model(checkpoint: str | Path, dtype: str = "float32") -> LlamaForCausalLM:
    """Build the model from an HF Llama folder (config.json + model.safetensors), its weights,
    activations and KV cache in `dtype` (a key of DTYPES; logits are float32 either way)."""
    from safetensors.torch import load_file

    folder = Path(checkpoint)
    cfg = LlamaConfig.from_file(folder / "config.json")
    model = LlamaForCausalLM(cfg)
    state = load_file(str(folder / "model.safetensors"))
    state = {k: v.to(torch.float32) for k, v in state.items()}
    if cfg.tie_word_embeddings and "lm_head.weight" not in state:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    unexpected = [k for k in unexpected if not k.endswith("rotary_emb.inv_freq")]
    if missing or unexpected:
        raise ValueError(f"checkpoint mismatch: missing {missing}, unexpected {unexpected}")
    model.eval()
    # weights, rope tables and (through new_kv) the KV cache in one precision, as a server
    # launched with --dtype runs them
    return model.to(DTYPES[dtype])


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def log_softmax_rows(logits: torch.Tensor, rowwise: bool) -> torch.Tensor:
    """log_softmax per row; rowwise keeps each reduction in a [1, vocab] shape."""
    if not rowwise:
        return torch.log_softmax(logits, dim=-1)
    return torch.cat(
        [torch.log_softmax(logits[i : i + 1].clone(), dim=-1) for i in range(len(logits))]
    )
