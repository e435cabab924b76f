"""vLLM OpenAI-compatible server as a baseline: /health, /version, /v1/models, /v1/completions.

Only `/v1/completions` with a token-id prompt is used for numbers: the ids go in as sent (no
re-tokenization), `prompt_logprobs=K` scores every prompt position (always a fresh prefill:
vLLM skips its prefix cache for prompt-logprob requests), `logprobs=K` scores generated tokens,
and `return_tokens_as_token_ids` + `return_token_ids` make every token an id (see vllm_parse).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.http import HttpEngine, is_transient, with_backoff
from kltui.engines.identity import ServerIdentity
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

    engine = "vllm"
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
        if e.kind in ("http-401", "http-403"):
            e.message += " (the vLLM baseline wants an API key: KLTUI_BASELINE_API_KEY)"
        return e

    async def version(self) -> str | None:
        """The server's /version, or None when it has no such route."""
        try:
            data = await self._get("/version")
        except EngineError as e:
            if e.kind == "http-404":
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
        except EngineError as e:
            if e.kind in ("http-404", "http-405"):
                return None
            raise
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
        except EngineError as e:
            if e.kind in ("http-404", "http-405"):
                return None
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
        if e.kind == "http-400" and (m := _MAX_LOGPROBS.search(e.message)):
            return self.fail(
                f"/v1/completions answered HTTP 400: vLLM caps logprobs at --max-logprobs "
                f"{m.group(1)} but kltui asked for {k}; restart vLLM with --max-logprobs {k} "
                f"or lower --top-k to {m.group(1)}",
                "max-logprobs",
            )
        return self._auth_hint(e)

    async def identify(self) -> ServerIdentity:
        """Identity and settings for RunStarted.servers and the alignment table.

        /version and /v1/models always; the full resolved config when the server runs with
        VLLM_SERVER_DEV_MODE=1 (`/server_info`); prefix caching and cache dtype from /metrics
        otherwise. A setting no endpoint reports stays absent (the table shows "unknown").
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
        cfg = await self.server_config()
        if cfg is not None:
            out.update(settings_from_server_info(cfg))
            out["config_source"] = "server_info"
        else:
            metric = await self.cache_config_metric()
            if metric:
                out["enable_prefix_caching"] = _truthy(metric.get("enable_prefix_caching"))
                out["kv_cache_dtype"] = metric.get("cache_dtype")
                out["config_source"] = "v1/models+metrics"
        return ServerIdentity.of(out)


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def settings_from_server_info(info: dict) -> dict:
    """The alignment-relevant part of vLLM's `/server_info?config_format=json`."""
    raw_cfg, raw_env = info.get("vllm_config"), info.get("vllm_env")
    cfg: dict = raw_cfg if isinstance(raw_cfg, dict) else {}
    env: dict = raw_env if isinstance(raw_env, dict) else {}
    model = cfg.get("model_config") or {}
    out = {
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
        "cudagraph_mode": _get(cfg, "compilation_config", "cudagraph_mode"),
        "attention_backend": _get(cfg, "attention_config", "backend")
        or env.get("VLLM_ATTENTION_BACKEND"),
        "batch_invariant": _truthy(env.get("VLLM_BATCH_INVARIANT")) or False,
    }
    out = {k: v for k, v in out.items() if v is not None}
    if "quantization" in model:
        out["quantization"] = model["quantization"]  # None here means "not quantized"
    return out


async def identify_vllm(url: str, api_key: str | None, *, timeout: float = 60.0) -> ServerIdentity:
    """The identity of a vLLM baseline for RunStarted.servers; an unreachable or broken server
    gives one with its `error` (and `error_kind`) instead of raising."""
    client = VLLMClient(url, api_key, timeout=timeout)
    try:
        return await client.identify()
    except EngineError as e:
        return ServerIdentity.unreachable(client.url, "vllm", e.message, e.kind)
    finally:
        await client.aclose()
