"""cross_engine's probes before any number: both engines' logprob contracts (vLLM's checked by
asking one short prompt at two K), vLLM's prefix cache under prompt logprobs (checked, not
assumed: vLLM bug #42019), and the tokenizers.

The prefix-cache probe: vLLM is meant to skip its prefix cache for prompt-logprob requests (a
fresh prefill each time). In versions with bug #42019 it does not: the logprobs of positions
read from the cache are left unwritten and hold a previous request's values, so they depend on
the order of requests. The probe scores a sequence P+X, then an unrelated sequence, then P+Y
(X and Y of one length, so every forward has the same shape), and compares P's positions bit
for bit; any difference refuses the comparison (no number is measured).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.identity import ServerIdentity
from kltui.engines.sglang import SGLangClient
from kltui.engines.vllm import PROBE_TEXT, VLLMClient
from kltui.helpers.context import HelperContext
from kltui.metrics.contract import (
    Comparability,
    Contract,
    judge,
    probe_kind,
    probe_rows,
    sglang_contract,
    vllm_contract,
    with_probe,
)

PROBE_TOKENS = 16
PREFIX_TAIL = 8  # the tokens after the shared prefix (X, Y)
PREFIX_BLOCKS = 4  # the shared prefix spans this many of vLLM's KV blocks (when they fit)
DEFAULT_BLOCK = 16  # vLLM's block size on GPUs, when the server does not say its own
BUG = "vLLM bug #42019"


def _k(ctx: HelperContext, ident: ServerIdentity) -> int:
    """The K asked for, within --max-logprobs when it is known (so that a K above it fails
    where it is used, with the fix named: the alignment row already flagged it)."""
    cap = ident.get("max_logprobs")
    k = max(ctx.top_k, 1)
    return min(k, cap) if isinstance(cap, int) and cap > 0 else k


async def contracts(
    ctx: HelperContext, vllm: VLLMClient, ident: ServerIdentity
) -> tuple[Comparability, dict]:
    """Both engines' logprob contracts at the positions compared (prompt positions: the
    numbers; sampled positions: the greedy rule, which reads ids and ranks only), vLLM's checked
    by a probe: one short prompt asked with prompt_logprobs=K and =1 (values that change with
    the K asked are no contract at all), then its prefix cache (`prefix_cache_probe`). Returns
    the prompt verdict and the contract as the summary records it.
    """
    mode = ident.get("logprobs_mode")
    src = (ident.get("setting_sources") or {}).get("logprobs_mode")
    declared = vllm_contract(
        "prompt", mode, source=f"vLLM {src} logprobs_mode" if src else "vLLM logprobs_mode"
    )
    ids = next((np.asarray(p[:PROBE_TOKENS]) for p in ctx.prompts if len(p) >= 2), None)
    probed: Contract = declared
    k_note = None
    k = _k(ctx, ident)
    if ids is not None:
        (wide,) = await vllm.completions([ids], max_tokens=1, prompt_logprobs=k, temperature=0.0)
        (one,) = await vllm.completions([ids], max_tokens=1, prompt_logprobs=1, temperature=0.0)
        if wide.prompt is None or one.prompt is None:
            raise vllm.fail("/v1/completions answered without the prompt_logprobs asked for")
        top = wide.prompt.top
        rows = probe_rows(top.ids[1:], top.lp[1:], ids[1:], wide.prompt.lp[1:])
        probed = with_probe(declared, probe_kind(rows), f"{ids.size - 1} prompt positions at K={k}")
        a, b = wide.prompt.lp[1:], one.prompt.lp[1:]
        if k > 1 and not np.allclose(a, b, rtol=0, atol=1e-6, equal_nan=True):
            j = int(np.argmax(~np.isclose(a, b, rtol=0, atol=1e-6, equal_nan=True)))
            k_note = (
                f"contract difference: vLLM's prompt logprob of a token changes with the "
                f"number of top-k asked (position {j + 1}: {a[j]:.6g} at prompt_logprobs={k}, "
                f"{b[j]:.6g} at 1); no value it returns is a fixed definition"
            )
    sg = sglang_contract("prompt")
    verdict = judge(sg, probed)
    if k_note is not None:
        verdict = Comparability("difference", False, True, f"prompt_logprobs={ctx.top_k}", k_note)
    cache = await prefix_cache_probe(ctx, vllm, ident, k)
    if cache.status == PrefixCacheStatus.STALE:
        verdict = Comparability("difference", False, False, "prefix caching", cache.message)
    sampled_v = vllm_contract("sampled", mode, temperature=0.0, source=declared.source)
    sampled = judge(sglang_contract("sampled", 0.0), sampled_v)
    contract = {
        "status": verdict.status,
        "setting": verdict.setting,
        "message": verdict.message,
        "prompt": {"sglang": sg.to_json(), "vllm": probed.to_json(), **verdict.to_json()},
        # the greedy comparison reads ids and ranks only, which every kind keeps
        "sampled": {
            "sglang": sglang_contract("sampled", 0.0).to_json(),
            "vllm": sampled_v.to_json(),
            **sampled.to_json(),
            "used_for": "ranks (the greedy rule's ids)",
        },
        "prefix_cache": cache.to_json(),
    }
    return verdict, contract


def probe_sequences(
    prompts: list, block_size: object, max_len: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """(P+X, an unrelated sequence of the same length, P+Y, len(P)) from the run's own ids
    (cycled when short), P spanning PREFIX_BLOCKS of vLLM's blocks within its max_model_len;
    None without two ids to build them from."""
    parts = [np.asarray(p, dtype=np.int64) for p in prompts if len(p)]
    stream = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if stream.size < 2:
        return None
    block = block_size if isinstance(block_size, int) and block_size > 0 else DEFAULT_BLOCK
    n = PREFIX_BLOCKS * block
    if isinstance(max_len, int) and max_len > 0:
        n = min(n, max_len - PREFIX_TAIL - 2)
    if n < 2:
        return None
    ring = np.resize(stream, n + PREFIX_TAIL)
    first = ring.copy()
    other = ring[::-1].copy()
    if np.array_equal(other[:n], first[:n]):
        other = np.roll(other, 1)
    third = np.concatenate([ring[:n], np.roll(ring[n:], 1)])
    return first, other, third, n


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).view(np.int64)


class PrefixCacheStatus(StrEnum):
    """What the probe found of vLLM's prompt logprobs under its prefix cache."""

    SAME = "same"  # bit-identical with and without the cached prefix
    STALE = "stale"  # they read the cache (the known vLLM bug): the message names the version
    NOT_CHECKED = "not checked"  # no prompt ids to build the sequences from


@dataclass(frozen=True, slots=True)
class PrefixCacheProbe:
    """Whether vLLM's prompt logprobs read its prefix cache (`prefix_cache_probe`)."""

    status: PrefixCacheStatus
    positions: int  # the shared prefix's positions compared
    block_size: int | None
    enable_prefix_caching: Any
    message: str

    def to_json(self) -> dict[str, Any]:
        """As the contract's `prefix_cache` records it."""
        return {
            "status": self.status,
            "positions": self.positions,
            "block_size": self.block_size,
            "enable_prefix_caching": self.enable_prefix_caching,
            "message": self.message,
        }


async def prefix_cache_probe(
    ctx: HelperContext, vllm: VLLMClient, ident: ServerIdentity, k: int
) -> PrefixCacheProbe:
    """P+X, an unrelated sequence, then P+Y, each alone: P's prompt logprobs (and top-k) must
    be bit-identical in the first and the last answer. The result as the contract records it:
    status "same", "stale" (with the one-line message naming vLLM's version and the bug) or
    "not checked" (no ids to build the sequences from)."""
    block = ident.get("block_size")
    seqs = probe_sequences(list(ctx.prompts), block, ident.get("max_model_len"))
    out = PrefixCacheProbe(
        PrefixCacheStatus.NOT_CHECKED,
        0,
        block if isinstance(block, int) else None,
        ident.get("enable_prefix_caching"),
        "no prompt ids to build the probe from",
    )
    if seqs is None:
        return out
    first, other, third, n = seqs
    answers = []
    for seq in (first, other, third):
        (c,) = await vllm.completions([seq], max_tokens=1, prompt_logprobs=k, temperature=0.0)
        if c.prompt is None:
            raise vllm.fail("/v1/completions answered without the prompt_logprobs asked for")
        answers.append(c.prompt)
    a, b = answers[0], answers[2]
    same = _bits(a.lp[1:n]) == _bits(b.lp[1:n])
    same &= (_bits(a.top.lp[1:n]) == _bits(b.top.lp[1:n])).all(axis=1)
    same &= (a.top.ids[1:n] == b.top.ids[1:n]).all(axis=1)
    if same.all():
        return replace(
            out,
            status=PrefixCacheStatus.SAME,
            positions=n - 1,
            message=(
                f"prompt logprobs of a {n}-token prefix bit-identical before and after an "
                "unrelated request: vLLM's prefix cache is not read for them"
            ),
        )
    j = int(np.argmin(same)) + 1
    version = ident.get("version") or "?"
    return replace(
        out,
        status=PrefixCacheStatus.STALE,
        positions=n - 1,
        message=(
            f"vLLM {version} returns stale prompt logprobs at prefix-cached positions ({BUG}): "
            f"position {j} of a shared {n}-token prefix read {a.lp[j]:.6g}, then {b.lp[j]:.6g} "
            f"after an unrelated request ({int((~same).sum())} of {n - 1} positions differ); no "
            "number it returns is comparable: restart it with --no-enable-prefix-caching, or use "
            "a vLLM without the bug"
        ),
    )


def startup_log(path: str | None) -> str | None:
    """The tail of the launched baseline's startup output (None: kltui did not launch it, or
    the file is gone: the settings only it names stay unknown)."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8 * 2**20))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


async def probe_tokenizers(sglang: SGLangClient, vllm: VLLMClient) -> bool | None:
    """Whether both engines tokenize the probe text alike (None: one cannot say)."""
    try:
        (a,) = await sglang.tokenize([PROBE_TEXT])
        b = await vllm.tokenize(PROBE_TEXT)
    except EngineError:
        return None  # the alignment row says "unknown"; a dead server is caught right after
    return None if b is None else bool(np.array_equal(a, b))
