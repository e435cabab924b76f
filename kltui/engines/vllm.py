"""vLLM OpenAI-compatible server as a baseline: /health, /version, /v1/models, /v1/completions.

Only `/v1/completions` with a token-id prompt is used for numbers: the ids go in as sent (no
re-tokenization), `prompt_logprobs=K` scores every prompt position (a fresh prefill: vLLM
skips its prefix cache for prompt-logprob requests, except in versions with its bug #42019,
which cross_engine's contract probe checks: `helpers/cross_preflight.py`), `logprobs=K` scores
generated tokens,
and `return_tokens_as_token_ids` + `return_token_ids` make every token an id (see vllm_parse).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypedDict, cast

import httpx
import numpy as np

from kltui.engines.errors import AuthRejected, BadRequest, EngineError, RouteNotFound
from kltui.engines.http import HttpEngine, is_transient, with_backoff
from kltui.engines.identity import EngineName, ServerIdentity
from kltui.engines.vllm_parse import Completion, ParseError, parse_completions
from kltui.untrusted import one_line, sanitize

# vLLM's validation message for a K above --max-logprobs (vllm/sampling_params.py).
_MAX_LOGPROBS = re.compile(r"greater than max allowed:\s*(-?\d+)")
_METRIC_INFO = re.compile(r"^vllm:cache_config_info\{(?P<labels>[^}]*)\}", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
# Answers hold about (prompt + max_tokens) * (K + 1) small JSON entries per choice.
BYTES_PER_ENTRY = 160
BASE_ANSWER_BYTES = 16 * 2**20
PROBE_TEXT = "Alignment probe: the quick brown fox, 12345 + 678 = 13023.\n"


def _truthy(v) -> bool | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


class VLLMClient(HttpEngine):
    """HTTP client of one vLLM (OpenAI-compatible) server: health, identity, completions with logprobs."""

    engine = EngineName.VLLM
    product = "a vLLM server"
    health_attempts = 4
    info_attempts = 3

    def __init__(self, base_url: str, api_key: str | None = None, **kw) -> None:
        super().__init__(base_url, api_key, **kw)
        self.model_id: str | None = None

    async def health(self) -> None:
        """Raise an EngineError unless /health answers OK."""
        try:
            resp = await self._client.get("/health", timeout=min(10.0, self.timeout))
        except httpx.HTTPError as e:
            raise self.transport_error(e, "/health") from None
        if resp.status_code in (401, 403):
            # a refused key will not change on retry; say which key this server takes
            raise self._auth_hint(self.http_error(resp, "/health"))
        if resp.status_code != 200:
            raise self.http_error(resp, "/health", "unhealthy")

    async def wait_healthy(self) -> None:
        """Wait, retrying transient errors with backoff, until /health answers OK."""
        await with_backoff(
            self.health,
            attempts=self.health_attempts,
            base_delay=self.retry_base_delay,
            retry_if=is_transient,
        )

    async def _get(self, route: str):
        async def once():
            try:
                return await self.request_json("GET", route, max_bytes=BASE_ANSWER_BYTES)
            except EngineError as e:
                raise self._auth_hint(e) from None

        return await with_backoff(
            once,
            attempts=self.info_attempts,
            base_delay=self.retry_base_delay,
            retry_if=is_transient,
        )

    def _auth_hint(self, e: EngineError) -> EngineError:
        if isinstance(e, AuthRejected):
            e.message += " (the vLLM baseline wants an API key: KLTUI_BASELINE_API_KEY)"
        return e

    async def version(self) -> str | None:
        """The server's /version, or None when it has no such route."""
        try:
            data = await self._get("/version")
        except RouteNotFound as e:
            if e.status == 404:
                return None
            raise
        return one_line(data.get("version"), 80) if isinstance(data, dict) else None

    async def models(self) -> list[dict]:
        """The model entries of /v1/models, sanitized."""
        data = await self._get("/v1/models")
        if not isinstance(data, dict) or not isinstance(data.get("data"), list):
            raise self.fail(
                "/v1/models did not return {data: [...]} (is this an OpenAI-compatible server?)"
            )
        return [sanitize(m, self.redact) for m in data["data"] if isinstance(m, dict)]

    async def model(self) -> dict:
        """The served model card; kltui compares against one model, so several is an error."""
        cards = await self.models()
        if not cards:
            raise self.fail("/v1/models lists no model")
        if len(cards) > 1:
            names = ", ".join(str(c.get("id")) for c in cards[:4])
            raise self.fail(f"/v1/models lists {len(cards)} models ({names}); serve one")
        self.model_id = str(cards[0].get("id"))
        return cards[0]

    async def server_config(self) -> dict | None:
        """vLLM's resolved config from `/server_info` (only with VLLM_SERVER_DEV_MODE=1)."""
        try:
            data = await self._get("/server_info?config_format=json")
        except RouteNotFound:
            return None
        return sanitize(data, self.redact) if isinstance(data, dict) else None

    async def cache_config_metric(self) -> dict | None:
        """Labels of the `vllm:cache_config_info` gauge on /metrics (prefix caching, cache
        dtype), available without dev mode."""
        try:
            resp = await self._client.get("/metrics", timeout=min(10.0, self.timeout))
        except httpx.HTTPError:
            return None
        if resp.status_code != 200:
            return None
        m = _METRIC_INFO.search(resp.text[: 4 * 2**20])
        if not m:
            return None
        return {k: one_line(v, 120) for k, v in _LABEL.findall(m.group("labels"))}

    async def tokenize(self, text: str) -> np.ndarray | None:
        """vLLM's own tokenization (special tokens as for a text prompt); None if unavailable."""
        body = {"prompt": text, "add_special_tokens": True}
        if self.model_id:
            body["model"] = self.model_id
        try:
            data = await self.post_json("/tokenize", body, max_bytes=BASE_ANSWER_BYTES)
        except RouteNotFound:
            return None
        except EngineError as e:
            raise self._auth_hint(e) from None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            raise self.fail("/tokenize did not return a tokens list")
        return np.asarray(tokens, dtype=np.int64)

    async def completions(
        self,
        prompts: Sequence[Sequence[int] | np.ndarray],
        *,
        max_tokens: int,
        prompt_logprobs: int | None = None,
        logprobs: int | None = None,
        temperature: float = 0.0,
        ignore_eos: bool = True,
    ) -> list[Completion]:
        """One non-streamed batched /v1/completions on token-id prompts, results in prompt order.

        `prompt_logprobs` or `logprobs` above the server's --max-logprobs is a 400 whose message
        says how to fix it. Never retried: a re-sent request would be another measurement.
        """
        if self.model_id is None:
            await self.model()
        sent = [np.asarray(p, dtype=np.int64) for p in prompts]
        body: dict = {
            "model": self.model_id,
            "prompt": [p.tolist() for p in sent],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "ignore_eos": ignore_eos,
            "skip_special_tokens": False,
            "return_tokens_as_token_ids": True,
            "return_token_ids": True,
        }
        if prompt_logprobs is not None:
            body["prompt_logprobs"] = prompt_logprobs
        if logprobs is not None:
            body["logprobs"] = logprobs
        k = max(prompt_logprobs or 0, logprobs or 0)
        entries = sum(p.size for p in sent) + len(sent) * max_tokens
        try:
            data = await self.post_json(
                "/v1/completions",
                body,
                max_bytes=BASE_ANSWER_BYTES + BYTES_PER_ENTRY * entries * (k + 2),
            )
        except EngineError as e:
            raise self._explain(e, k) from None
        try:
            return parse_completions(
                data, sent, prompt_k=prompt_logprobs, k=logprobs if logprobs is not None else 0
            )
        except ParseError as e:
            raise self.fail(f"/v1/completions: {e}", "malformed-answer") from None

    def _explain(self, e: EngineError, k: int) -> EngineError:
        if isinstance(e, BadRequest) and (m := _MAX_LOGPROBS.search(e.message)):
            return self.fail(
                f"/v1/completions answered HTTP 400: vLLM caps logprobs at --max-logprobs "
                f"{m.group(1)} but kltui asked for {k}; restart vLLM with --max-logprobs {k} "
                f"or lower --top-k to {m.group(1)}",
                "max-logprobs",
            )
        return self._auth_hint(e)

    async def identify(self, startup_log: str | None = None) -> ServerIdentity:
        """Identity and settings for RunStarted.servers and the alignment table.

        /version and /v1/models always; the full resolved config when the server runs with
        VLLM_SERVER_DEV_MODE=1 (`/server_info`); /metrics' `vllm:cache_config_info` for what
        that does not say; and `startup_log`, the text vLLM printed while starting, when the
        caller launched it (the only place that names the attention backend vLLM picked by
        itself). A setting no source reports stays absent (the table shows "unknown");
        `setting_sources` says where each one was read.
        """
        await self.wait_healthy()
        card = await self.model()
        out: dict = {
            "url": self.url,
            "engine": "vllm",
            "version": await self.version(),
            "served_model_name": card.get("id"),
            "model_path": card.get("root") or card.get("id"),
            "max_model_len": card.get("max_model_len"),
            "config_source": "v1/models",
        }
        sources = {k: "/v1/models" for k in ("served_model_name", "model_path", "max_model_len")}
        sources = {k: v for k, v in sources.items() if out.get(k) is not None}
        layers: list[tuple[str, VLLMSettings]] = []
        cfg = await self.server_config()
        if cfg is not None:
            layers.append(("/server_info", settings_from_server_info(cfg)))
            out["config_source"] = "server_info"
        metric = await self.cache_config_metric()
        if metric:
            layers.append(("/metrics cache_config_info", settings_from_cache_metric(metric)))
            if cfg is None:
                out["config_source"] = "v1/models+metrics"
        if startup_log:
            layers.append(("startup log", settings_from_startup_log(startup_log)))
        for source, found in layers:
            for key, value in found.items():
                # a later source fills only what the earlier ones left unsaid
                if out.get(key) is None and value is not None:
                    out[key] = value
                    sources[key] = source
                elif key == "quantization" and key not in out:
                    out[key] = value  # None here means "not quantized", which is a value
                    sources[key] = source
        out["setting_sources"] = sources
        return ServerIdentity.of(out)


class VLLMSettings(TypedDict, total=False):
    """The alignment-relevant settings one source states (a key it does not state is absent;
    `quantization` None means "not quantized"). Merged into the identity in source order."""

    dtype: Any
    tokenizer: Any
    max_model_len: Any
    max_logprobs: Any
    logprobs_mode: Any
    enforce_eager: Any
    seed: Any
    tp_size: Any
    enable_prefix_caching: Any
    kv_cache_dtype: Any
    block_size: Any
    cudagraph_mode: Any
    max_num_seqs: Any
    max_num_batched_tokens: Any
    enable_chunked_prefill: Any
    attention_backend: Any
    flash_attn_version: Any
    batch_invariant: bool
    quantization: Any


def _stated(found: VLLMSettings) -> VLLMSettings:
    """`found` without the settings its source left unsaid (None)."""
    return cast(VLLMSettings, {k: v for k, v in found.items() if v is not None})


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def settings_from_server_info(info: dict) -> VLLMSettings:
    """The alignment-relevant part of vLLM's `/server_info?config_format=json`.

    Its `attention_config.backend` is what was asked for: None when vLLM picks the backend
    itself at load time (the default), which it then names only in its startup log.
    """
    raw_cfg, raw_env = info.get("vllm_config"), info.get("vllm_env")
    cfg: dict = raw_cfg if isinstance(raw_cfg, dict) else {}
    env: dict = raw_env if isinstance(raw_env, dict) else {}
    model = cfg.get("model_config") or {}
    out: VLLMSettings = {
        "dtype": model.get("dtype"),
        "tokenizer": model.get("tokenizer"),
        "max_model_len": model.get("max_model_len"),
        "max_logprobs": model.get("max_logprobs"),
        "logprobs_mode": model.get("logprobs_mode"),
        "enforce_eager": model.get("enforce_eager"),
        "seed": model.get("seed"),
        "tp_size": _get(cfg, "parallel_config", "tensor_parallel_size"),
        "enable_prefix_caching": _get(cfg, "cache_config", "enable_prefix_caching"),
        "kv_cache_dtype": _get(cfg, "cache_config", "cache_dtype"),
        "block_size": _get(cfg, "cache_config", "block_size"),
        "cudagraph_mode": _get(cfg, "compilation_config", "cudagraph_mode"),
        "max_num_seqs": _get(cfg, "scheduler_config", "max_num_seqs"),
        "max_num_batched_tokens": _get(cfg, "scheduler_config", "max_num_batched_tokens"),
        "enable_chunked_prefill": _get(cfg, "scheduler_config", "enable_chunked_prefill"),
        "attention_backend": _get(cfg, "attention_config", "backend")
        or env.get("VLLM_ATTENTION_BACKEND"),
        "flash_attn_version": _get(cfg, "attention_config", "flash_attn_version")
        or env.get("VLLM_FLASH_ATTN_VERSION"),
        "batch_invariant": _truthy(env.get("VLLM_BATCH_INVARIANT")) or False,
    }
    out = _stated(out)
    if "quantization" in model:
        out["quantization"] = model["quantization"]  # None here means "not quantized"
    return out


def settings_from_cache_metric(labels: dict) -> VLLMSettings:
    """The settings in the labels of /metrics' `vllm:cache_config_info` (no dev mode needed);
    every label is a string there."""
    out: VLLMSettings = {
        "enable_prefix_caching": _truthy(labels.get("enable_prefix_caching")),
        "kv_cache_dtype": labels.get("cache_dtype") or None,
    }
    block = labels.get("block_size")
    if isinstance(block, str) and block.isdigit():
        out["block_size"] = int(block)
    return _stated(out)


# What vLLM prints while it starts: the backend its selector picked ("Using FLASH_ATTN attention
# backend out of potential backends: ...", older: "Using AttentionBackendEnum.FLASH_ATTN
# backend.", "Using Flash Attention backend."), the FlashAttention version, and CUDA graphs.
_LOG_BACKEND = re.compile(
    r"Using (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]+) (?:attention )?backend", re.M
)
_LOG_OLD_BACKEND = re.compile(r"Using (Flash Attention|FlashInfer|Triton|Torch SDPA) backend")
_LOG_FA_VERSION = re.compile(r"(?:FlashAttention|flash_attn|Flash Attention) version[:= ]+(\d)")
_LOG_EAGER = re.compile(r"enforce_eager=(True|False)")
_OLD_NAMES = {
    "Flash Attention": "FLASH_ATTN",
    "FlashInfer": "FLASHINFER",
    "Triton": "TRITON_ATTN",
    "Torch SDPA": "TORCH_SDPA",
}


def settings_from_startup_log(text: str) -> VLLMSettings:
    """The settings vLLM's own startup log states (when kltui launched it); the last mention
    wins, as a restarted worker prints again."""
    text = text[-8 * 2**20 :]
    out: VLLMSettings = {}
    if found := _LOG_BACKEND.findall(text):
        out["attention_backend"] = found[-1]
    elif found := _LOG_OLD_BACKEND.findall(text):
        out["attention_backend"] = _OLD_NAMES[found[-1]]
    if found := _LOG_FA_VERSION.findall(text):
        out["flash_attn_version"] = int(found[-1])
    if found := _LOG_EAGER.findall(text):
        out["enforce_eager"] = found[-1] == "True"
    if "attention_backend" in out:  # the only text the log gives
        out["attention_backend"] = one_line(out["attention_backend"], 80)
    return out


async def identify_vllm(
    url: str, api_key: str | None, *, timeout: float = 60.0, startup_log: str | None = None
) -> ServerIdentity:
    """The identity of a vLLM baseline for RunStarted.servers; an unreachable or broken server
    gives one with its `error` (and `error_kind`) instead of raising. `startup_log`: what vLLM
    printed while starting, when the caller launched it."""
    client = VLLMClient(url, api_key, timeout=timeout)
    try:
        return await client.identify(startup_log)
    except EngineError as e:
        return ServerIdentity.unreachable(client.url, "vllm", e.message, e.kind)
    finally:
        await client.aclose()
