"""SGLang native API client: /generate (batched, streamed), /flush_cache, /server_info, ..."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import httpx
import numpy as np
import orjson

from kltui.engines.errors import EngineError, FlushBusy, clean
from kltui.engines.http import HttpEngine, error_detail, with_backoff
from kltui.engines.sglang_parse import Delta, GenResult, ParseError, StreamAssembler, parse_result
from kltui.engines.sse import DONE, SSEError, iter_events

# SGLang 0.5.23 schema-checks sampling_params (unknown key -> HTTP 400), so only these go out.
KNOWN_SAMPLING_KEYS = frozenset(
    {
        "temperature",
        "max_new_tokens",
        "ignore_eos",
        "top_p",
        "top_k",
        "min_p",
        "stop",
        "stop_token_ids",
        "n",
        "stream_interval",
        "sampling_seed",
        "frequency_penalty",
        "presence_penalty",
        "repetition_penalty",
        "min_new_tokens",
        "skip_special_tokens",
    }
)

SERVER_INFO_KEYS = (
    "version",
    "model_path",
    "tokenizer_path",
    "served_model_name",
    "dtype",
    "tp_size",
    "dp_size",
    "page_size",
    "attention_backend",
    "disable_radix_cache",
    "enable_deterministic_inference",
    "random_seed",
    "disable_cuda_graph",
    "chunked_prefill_size",
    "sampling_backend",
    "stream_interval",
    "incremental_streaming_output",
    "speculative_algorithm",
    "context_length",
    "startup_time",
    "kltui_fault",
)


def sampling_params(**kw) -> dict:
    unknown = set(kw) - KNOWN_SAMPLING_KEYS
    if unknown:
        raise ValueError(f"unknown sampling_params key(s) {sorted(unknown)}; SGLang rejects them")
    return {k: v for k, v in kw.items() if v is not None}


class SGLangClient(HttpEngine):
    engine = "sglang"

    async def health(self) -> None:
        try:
            resp = await self._client.get("/health", timeout=10.0)
        except httpx.HTTPError as e:
            raise self.transport_error(e, "/health") from None
        if resp.status_code != 200:
            raise self.fail(f"/health answered HTTP {resp.status_code}", "unhealthy")

    async def wait_healthy(self, attempts: int = 4) -> None:
        await with_backoff(self.health, attempts=attempts)

    async def _info(self, route: str, legacy: str) -> dict:
        try:
            info = await self.request_json("GET", route)
        except EngineError as e:
            if e.kind not in ("http-404", "http-405"):
                raise
            info = await self.request_json("GET", legacy)
        if not isinstance(info, dict):
            raise self.fail(f"{route} did not return a JSON object (is this an SGLang server?)")
        return info

    async def server_info(self) -> dict:
        return await self._info("/server_info", "/get_server_info")

    async def model_info(self) -> dict:
        return await self._info("/model_info", "/get_model_info")

    async def flush_cache(self, timeout_s: float = 30.0) -> None:
        route = f"/flush_cache?timeout={timeout_s:g}"
        try:
            resp = await self._client.post(route, timeout=timeout_s + 10.0)
        except httpx.HTTPError as e:
            raise self.transport_error(e, "/flush_cache") from None
        if resp.status_code == 400:
            raise FlushBusy(self.url, error_detail(resp))
        if resp.status_code >= 400:
            raise self.fail(
                f"/flush_cache answered HTTP {resp.status_code}: {error_detail(resp)}",
                f"http-{resp.status_code}",
            )

    def _body(self, batch: Sequence[Sequence[int]], sp: dict, *, stream: bool, **kw) -> dict:
        body: dict = {
            "input_ids": [np.asarray(x).tolist() for x in batch],
            "sampling_params": sp,
            "stream": stream,
        }
        if kw.get("return_logprob"):
            body["return_logprob"] = True
            body["return_text_in_logprobs"] = False
            body["logprob_start_len"] = kw.get("logprob_start_len", -1)
            if kw.get("top_logprobs_num"):
                body["top_logprobs_num"] = kw["top_logprobs_num"]
            if kw.get("token_ids_logprob") is not None:
                body["token_ids_logprob"] = kw["token_ids_logprob"]
        return body

    async def generate(self, batch: Sequence[Sequence[int]], sp: dict, **kw) -> list[GenResult]:
        """One non-streamed batched /generate; results in input order, lengths checked."""
        data = await self.request_json(
            "POST",
            "/generate",
            content=orjson.dumps(self._body(batch, sp, stream=False, **kw)),
            headers={"Content-Type": "application/json"},
        )
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or len(data) != len(batch):
            n = len(data) if isinstance(data, list) else type(data).__name__
            raise self.fail(f"/generate returned {n} results for a batch of {len(batch)}")
        try:
            return [parse_result(obj, i) for i, obj in enumerate(data)]
        except ParseError as e:
            raise self.fail(f"/generate: {e}") from None

    async def generate_stream(
        self, batch: Sequence[Sequence[int]], sp: dict, *, incremental: bool, **kw
    ) -> AsyncIterator[Delta | list[GenResult]]:
        """Yields a Delta per new run of tokens, then the list of final results."""
        body = orjson.dumps(self._body(batch, sp, stream=True, **kw))
        asm = StreamAssembler(len(batch), incremental)
        events = 0
        try:
            async with self._client.stream(
                "POST", "/generate", content=body, headers={"Content-Type": "application/json"}
            ) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise self.fail(
                        f"/generate answered HTTP {resp.status_code}: {error_detail(resp)}",
                        f"http-{resp.status_code}",
                    )
                done = False
                async for item in iter_events(resp.aiter_lines()):
                    if item is DONE:
                        done = True
                        break
                    events += 1
                    if "error" in item and "meta_info" not in item:
                        err = item["error"]
                        msg = err.get("message", err) if isinstance(err, dict) else err
                        raise self.fail(
                            f"/generate stream error: {clean(str(msg))}", "stream-error"
                        )
                    delta = asm.feed(item)
                    if delta is not None:
                        yield delta
                if not done:
                    raise self.fail(
                        f"/generate stream ended without [DONE] after {events} events", "no-done"
                    )
        except httpx.HTTPError as e:
            err = self.transport_error(e, "/generate stream")
            err.message += f" after {events} events"
            raise err from None
        except (ParseError, SSEError) as e:
            msg = e.message if isinstance(e, SSEError) else str(e)
            raise self.fail(f"/generate stream: {msg}", "malformed-stream") from None
        try:
            yield asm.results()
        except ParseError as e:
            raise self.fail(f"/generate stream: {e}", "malformed-stream") from None

    async def tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Server-side tokenization: a prefill-only request returns the ids it scored."""
        body = {
            "text": list(texts),
            "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
            "return_logprob": True,
            "logprob_start_len": 0,
        }
        data = await self.request_json(
            "POST",
            "/generate",
            content=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or len(data) != len(texts):
            raise self.fail("tokenizing via /generate returned the wrong number of results")
        try:
            return [parse_result(obj, i).input_logprob_ids for i, obj in enumerate(data)]
        except ParseError as e:
            raise self.fail(f"tokenizing via /generate: {e}") from None
