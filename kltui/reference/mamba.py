"""The recurrent layer of `--arch mamba`: a gated diagonal linear recurrence behind a causal
depthwise conv (the shape of Mamba / gated-delta-net layers, reduced to what matters for
caching: a state that carries the whole past, so a restored prefix needs its state, not its
keys).

Per token x_t (after an RMSNorm of the residual stream):
    u_t = W_u x_t,  z_t = W_z x_t,  a_t = sigmoid(W_a x_t + b_a)
    c_t = sum_k w_k * u_{t-K+1+k} + b_c          (conv over the last K inputs: the conv state)
    s_t = a_t * s_{t-1} + (1 - a_t) * silu(c_t)   (the SSM state)
    x_t += W_o (s_t * silu(z_t))
The state of a sequence after n tokens is (the last K-1 inputs u, s_n): `RecurrentState`.

The weights are not in the checkpoint: they are drawn at load from a fixed seed (RECURRENT_SEED),
the output projection scaled so that the trained model's peaked distributions survive while the
state still moves the logits well above float32 noise. The layer sits before the two attention
layers (Qwen3-Next's order: linear attention first).

Two kernels, as the attention layers have: `batched` runs the projections of all rows as one
matmul and the conv as one windowed product (batch-shape rounding, like a real server's), and
`row` runs one token alone in fixed shapes; prefill rows and decode rows then go through the
very same ops, so `--deterministic` stays bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from kltui.reference.arch import CONV_KERNEL, LINEAR_HEAD_DIM, LINEAR_HEADS

RECURRENT_SEED = 20260707
INIT_STD = 0.08  # input projections
OUT_STD = 0.25  # output projection: the layer's weight in the residual stream
DECAY_BIAS = 2.0  # sigmoid(2) ~ 0.88: a memory of about ten tokens, longer for some channels


@dataclass
class RecurrentState:
    """A sequence's recurrent state: conv [K-1, D] (the last inputs) and ssm [D]."""

    conv: torch.Tensor
    ssm: torch.Tensor

    def clone(self) -> RecurrentState:
        return RecurrentState(self.conv.clone(), self.ssm.clone())

    def copy_from(self, other: RecurrentState) -> None:
        self.conv.copy_(other.conv)
        self.ssm.copy_(other.ssm)


class RecurrentBlock(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        d = LINEAR_HEADS * LINEAR_HEAD_DIM
        self.dim = d
        self.norm_weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self.in_proj = nn.Linear(hidden, 3 * d, bias=False)  # u, z, a pre-activation
        self.a_bias = nn.Parameter(torch.full((d,), DECAY_BIAS))
        self.conv_weight = nn.Parameter(torch.zeros(CONV_KERNEL, d))
        self.conv_bias = nn.Parameter(torch.zeros(d))
        self.out_proj = nn.Linear(d, hidden, bias=False)

    def init_weights(self, seed: int = RECURRENT_SEED) -> None:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            w = self.in_proj.weight
            w.copy_(torch.randn(w.shape, generator=g) * INIT_STD)
            w = self.out_proj.weight
            w.copy_(torch.randn(w.shape, generator=g) * OUT_STD / self.dim**0.5)
            self.conv_weight.copy_(torch.randn(self.conv_weight.shape, generator=g) * 0.5)
            self.a_bias.add_(torch.randn(self.dim, generator=g))

    def new_state(self, dtype: torch.dtype) -> RecurrentState:
        return RecurrentState(
            torch.zeros(CONV_KERNEL - 1, self.dim, dtype=dtype), torch.zeros(self.dim, dtype=dtype)
        )

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.norm_weight * (x * torch.rsqrt(variance + self.eps))

    def _split(self, proj: torch.Tensor):
        d = self.dim
        u, z, a = proj[:, :d], proj[:, d : 2 * d], proj[:, 2 * d :]
        return u, z, torch.sigmoid(a + self.a_bias)

    def batched(
        self, x: torch.Tensor, state: RecurrentState, snap_at: dict[int, int], start: int
    ) -> tuple[torch.Tensor, dict[int, RecurrentState]]:
        """Rows x [n, hidden] of one sequence at positions start..; advances `state` in place.
        snap_at maps a sequence length (the state after that many tokens) to the length it is
        saved as; returns the saved states by the latter."""
        u, z, a = self._split(self.in_proj(self._norm(x)))
        window = torch.cat([state.conv, u])  # [K-1+n, D]
        frames = window.unfold(0, CONV_KERNEL, 1)  # [n, D, K]
        c = torch.einsum("ndk,kd->nd", frames, self.conv_weight) + self.conv_bias
        v = F.silu(c)
        s = state.ssm
        outs, snaps = [], {}
        for t in range(x.shape[0]):
            s = a[t] * s + (1 - a[t]) * v[t]
            outs.append(s)
            if start + t + 1 in snap_at:
                conv = window[t + 1 : t + CONV_KERNEL].clone()
                snaps[snap_at[start + t + 1]] = RecurrentState(conv, s.clone())
        state.conv.copy_(window[-(CONV_KERNEL - 1) :])
        state.ssm.copy_(s)
        y = torch.stack(outs) * F.silu(z)
        return x + self.out_proj(y), snaps

    def row(self, x: torch.Tensor, state: RecurrentState) -> torch.Tensor:
        """One token x [1, hidden] in fixed shapes; advances `state` in place."""
        u, z, a = self._split(self.in_proj(self._norm(x)))
        window = torch.cat([state.conv, u])  # [K, D]
        c = (window * self.conv_weight).sum(0) + self.conv_bias
        s = a[0] * state.ssm + (1 - a[0]) * F.silu(c)
        state.conv.copy_(window[1:])
        state.ssm.copy_(s)
        return x + self.out_proj((s * F.silu(z[0]))[None, :].clone())
