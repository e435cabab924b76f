"""SGLang native API client: /generate (batched, streamed), /flush_cache, /server_info, ..."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import numpy as np
import orjson

from kltui.engines.errors import EngineError, FlushBusy, NoTokenizer, RouteNotFound
from kltui.engines.geometry import StateGeometry
from kltui.engines.geometry_build import build_geometry
from kltui.engines.http import JSON_HEADERS, HttpEngine, is_transient, with_backoff
from kltui.engines.idcheck import check_ids
from kltui.engines.identity import EngineName, ServerIdentity
from kltui.engines.model_config import ModelConfig, local_config
from kltui.engines.sglang_parse import Delta, GenResult, ParseError, StreamAssembler, parse_result
from kltui.engines.sglang_request import NO_LOGPROBS, LogprobAsk
from kltui.engines.sse import DONE, SSEError, iter_events, iter_lines
from kltui.engines.weights import is_loopback
from kltui.untrusted import one_line, sanitize

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

# What identifies one server process: a change in any of them between two reads of
# /server_info means the server restarted (or was replaced) in between.
PROCESS_IDENTITY = (
    "startup_time",
    "version",
    "model_path",
    "tp_size",
    "random_seed",
    "kltui_fault",
)

# How SGLang 0.5.x refuses text when started with --skip-tokenizer-init (tokenizer_manager).
NO_TOKENIZER_MARKS = ("cannot accept text prompts", "skip_tokenizer_init=True")
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
    "port",  # with startup_time: one server under two URLs (engines.identity.same_process)
    "weights_sha256",  # no SGLang reports one today; a server that does is believed
    "kltui_fault",
)
# what kltui found on this machine about a server's weights (engines/weights.py), filled in by
# the runner when it compares servers; null otherwise
LOCAL_WEIGHTS_KEYS = ("local_weights_sha256", "local_weights_note")


def sampling_params(**kw) -> dict:
    """SGLang sampling_params from keyword arguments, refusing keys SGLang does not know."""
    unknown = set(kw) - KNOWN_SAMPLING_KEYS
    if unknown:
        raise ValueError(f"unknown sampling_params key(s) {sorted(unknown)}; SGLang rejects them")
    return {k: v for k, v in kw.items() if v is not None}


# An answer holds at most (prompt + new tokens) entries per item, each a short triple plus its
# top-k alternatives; far more bytes than that is a server gone wrong, and reading it all would
# only exhaust memory. The constant leaves room for text and meta fields.
BYTES_PER_ENTRY = 512
BASE_ANSWER_BYTES = 64 * 2**20


def _answer_cap(entries: int, top_k: int = 0) -> int:
    return BASE_ANSWER_BYTES + BYTES_PER_ENTRY * entries * (1 + max(0, int(top_k or 0)))


# every key of an SGLang server's identity (docs/JSON.md `servers`)
IDENTITY_KEYS = (
    "url",
    "engine",
    *SERVER_INFO_KEYS,
    "skip_tokenizer_init",
    "weight_version",
    *LOCAL_WEIGHTS_KEYS,
    "geometry",  # engines/geometry.StateGeometry.record()
)


def server_identity(
    url: str, info: dict, model: dict, geo: StateGeometry | None = None
) -> ServerIdentity:
    """What of /server_info and /model_info decides what a result means, and the geometry."""
    out: dict[str, Any] = {"url": url, "engine": "sglang"}
    out.update({k: info.get(k) for k in SERVER_INFO_KEYS})  # null: this server did not say
    out["model_path"] = info.get("model_path") or model.get("model_path")
    out["served_model_name"] = model.get("served_model_name") or info.get("served_model_name")
    out["weight_version"] = model.get("weight_version")
    out["weights_sha256"] = info.get("weights_sha256") or model.get("weights_sha256")
    out.update(dict.fromkeys(LOCAL_WEIGHTS_KEYS))
    if info.get("skip_tokenizer_init"):  # only then: every other server has its tokenizer
        out["skip_tokenizer_init"] = True
    out["geometry"] = (geo or build_geometry(info, model, None)).record()
    return ServerIdentity.of(out)


def request_ids(n: int) -> list[str]:
    """One fresh request id (SGLang's `rid`) per prompt of a batch: unique across requests, as
    SGLang requires of the requests it holds at once."""
    batch = uuid.uuid4().hex[:16]
    return [f"kltui-{batch}-{i}" for i in range(n)]


class SGLangClient(HttpEngine):
    """HTTP client of one SGLang server: health, identity, /generate with logprobs, cache flush."""

    engine = EngineName.SGLANG
    product = "an SGLang server"
    # Only idempotent requests are retried: /health, /server_info, /model_info, /flush_cache.
    # A /generate is never re-sent: a second attempt would run on a different batch and cache
    # state than the one being measured.
    health_attempts = 4
    info_attempts = 3
    flush_attempts = 3

    async def health(self) -> None:
        """Raise an EngineError unless /health answers OK."""
        limit = min(10.0, self.timeout)
        try:
            resp = await self._client.get("/health", timeout=limit)
        except httpx.HTTPError as e:
            raise self.transport_error(e, "/health", limit) from None
        if resp.status_code in (401, 403):
            raise self.fail(
                f"/health answered HTTP {resp.status_code}: the server wants an API key "
                "(--api-key or KLTUI_API_KEY) or rejected this one",
                f"http-{resp.status_code}",
            )
        if resp.status_code != 200:
            raise self.http_error(resp, "/health", "unhealthy")

    async def wait_healthy(self, attempts: int | None = None) -> None:
        """Wait, retrying transient errors with backoff, until /health answers OK."""
        await with_backoff(
            self.health,
            attempts=attempts or self.health_attempts,
            base_delay=self.retry_base_delay,
            retry_if=is_transient,
        )

    async def _info_once(self, route: str, legacy: str) -> dict:
        try:
            info = await self.request_json("GET", route)
        except RouteNotFound:
            info = await self.request_json("GET", legacy)
        if not isinstance(info, dict):
            raise self.fail(f"{route} did not return a JSON object (is this an SGLang server?)")
        # model_path, version, ... are shown and recorded: make them inert text here, once.
        return sanitize(info, self.redact)

    async def _info(self, route: str, legacy: str) -> dict:
        return await with_backoff(
            lambda: self._info_once(route, legacy),
            attempts=self.info_attempts,
            base_delay=self.retry_base_delay,
            retry_if=is_transient,
        )

    async def server_info(self) -> dict:
        """The server's /server_info (or older /get_server_info), sanitized."""
        return await self._info("/server_info", "/get_server_info")

    async def identify(self) -> ServerIdentity:
        """Who this server is (`server_identity`)."""
        identity, _info = await self.identify_with_info()
        return identity

    async def identify_with_info(
        self, model_config: ModelConfig | None = None
    ) -> tuple[ServerIdentity, dict]:
        """This server's identity and its /server_info (/model_info: optional, older servers
        404); the geometry reads `model_config`, else a loopback server's model folder's."""
        info = await self.server_info()
        try:
            model = await self.model_info()
        except EngineError:
            model = {}
        if model_config is None and is_loopback(self.url):
            model_config = local_config(info.get("model_path") or model.get("model_path"))
        geometry = build_geometry(info, model, model_config)
        return server_identity(self.url, info, model, geometry), info

    async def model_info(self) -> dict:
        """The server's /model_info (or older /get_model_info), sanitized."""
        return await self._info("/model_info", "/get_model_info")

    async def _flush_once(self, timeout_s: float) -> None:
        route = f"/flush_cache?timeout={timeout_s:g}"
        # SGLang waits up to timeout_s for idle before answering; then the usual latency.
        limit = timeout_s + min(10.0, self.timeout)
        try:
            resp = await self._client.post(route, timeout=limit)
        except httpx.HTTPError as e:
            raise self.transport_error(e, "/flush_cache", limit) from None
        if resp.status_code == 400:
            raise FlushBusy(self.url, self.error_detail(resp))
        if resp.status_code >= 400:
            raise self.http_error(resp, "/flush_cache")

    async def flush_cache(self, timeout_s: float = 30.0) -> None:
        """Flushing twice is harmless, so a busy or briefly unreachable server is retried."""
        await with_backoff(
            lambda: self._flush_once(timeout_s),
            attempts=self.flush_attempts,
            base_delay=self.retry_base_delay,
            retry_if=is_transient,
        )

    def _body(
        self,
        batch: Sequence[Sequence[int] | np.ndarray],
        sp: dict,
        ask: LogprobAsk,
        *,
        stream: bool,
        rids: list[str] | None = None,
    ) -> dict:
        body: dict = {
            "input_ids": [np.asarray(x).tolist() for x in batch],
            "sampling_params": sp,
        }
        if rids is not None:
            # SGLang's own request field; it echoes each as meta_info.id, which ties an answer
            # to its prompt where nothing else can (a decode answer has no input ids)
            body["rid"] = rids
        if stream:  # SGLang's helpers leave the key out; not streaming is its default
            body["stream"] = True
        return body | ask.body_fields()

    def check_results(
        self,
        results: list[GenResult],
        batch: Sequence[Sequence[int] | np.ndarray],
        sp: dict,
        route: str,
        rids: list[str] | None = None,
        ask: LogprobAsk = NO_LOGPROBS,
    ) -> None:
        """Verify before trusting: every answer must belong to its prompt and be complete.

        Catches answers out of order (prompt_tokens, the echoed request id, or the replayed ids
        differ from what was sent), a server that ignores max_new_tokens, aborted requests, and
        logprob arrays whose length does not match the tokens they claim to score. Each result
        keeps the rid it was sent with (`GenResult.prompt_verified`).
        """
        max_new = sp.get("max_new_tokens")
        logprobs = ask.return_logprob
        start = ask.logprob_start_len
        owner = {rid: j for j, rid in enumerate(rids or ())}
        for i, (r, sent) in enumerate(zip(results, batch, strict=True)):
            if rids is not None:
                r.rid = rids[i]
            n_sent = len(sent)
            fr = r.finish_reason or {}
            if fr.get("type") == "abort":
                raise self.fail(
                    f"{route}: the server aborted request {i} ({one_line(fr.get('message'), 160)})",
                    "aborted",
                )
            if r.prompt_tokens and r.prompt_tokens != n_sent:
                raise self.fail(
                    f"{route}: answer {i} reports prompt_tokens={r.prompt_tokens} but prompt {i} "
                    f"has {n_sent} tokens (answers out of order, or for another request)",
                    "wrong-order",
                )
            echoed = r.meta.get("id")
            j = owner.get(echoed) if isinstance(echoed, str) else None
            if j is not None and j != i:
                # an id that is none of ours (a proxy's own) proves nothing either way
                raise self.fail(
                    f"{route}: answer {i} is the answer to prompt {j} (its meta_info.id "
                    f"{one_line(echoed, 60)!r} is the rid prompt {j} was sent with): answers "
                    "rotated or swapped between requests",
                    "wrong-order",
                )
            if isinstance(max_new, int) and r.output_ids.size > max_new:
                raise self.fail(
                    f"{route}: answer {i} has {r.output_ids.size} tokens but max_new_tokens is "
                    f"{max_new}",
                    "too-many-tokens",
                )
            if not logprobs:
                continue
            if max_new == 0 and r.output_ids.size == 0 and r.output_logprobs.size:
                # a scoring prefill's output side is never read: real SGLang 0.5.23 under load
                # answered one with an output logprob and no token (docs/FIELD_NOTES.md §9);
                # its input logprobs are checked below like any other, the caller says so
                r.stray_output_logprobs = int(r.output_logprobs.size)
                r.output_logprobs = r.output_logprobs[:0]
                r.output_top = None
            if r.output_logprobs.size != r.output_ids.size:
                raise self.fail(
                    f"{route}: answer {i} has {r.output_ids.size} output tokens but "
                    f"{r.output_logprobs.size} output_token_logprobs",
                    "length-mismatch",
                )
            if start == 0:
                self._check_replayed_ids(r, np.asarray(sent, dtype=np.int64), i, route)

    def _check_replayed_ids(self, r: GenResult, sent: np.ndarray, i: int, route: str) -> None:
        # With logprob_start_len=0, entry k of input_token_logprobs scores sent[k]: checking the
        # whole row proves the answer is for this prompt and that no entry is shifted.
        if r.input_logprobs.size != sent.size:
            raise self.fail(
                f"{route}: answer {i} has {r.input_logprobs.size} input_token_logprobs for "
                f"{sent.size} input tokens",
                "length-mismatch",
            )
        if np.array_equal(r.input_logprob_ids, sent):
            return
        found = check_ids(r.input_logprob_ids, sent)
        if found.misaligned is not None:
            k = int(found.positions[0])
            raise self.fail(
                f"{route}: answer {i} input_token_logprobs[{k}] scores token "
                f"{int(r.input_logprob_ids[k])} but token {int(sent[k])} was sent there "
                f"(answers out of order or misaligned: {found.misaligned})",
                "token-mismatch",
            )
        # The same id reported differently wherever it was sent: a server quirk (real SGLang
        # reports the last vocabulary id as 0), kept for the helper to report per position.
        r.id_mismatch = found.positions

    async def generate(
        self,
        batch: Sequence[Sequence[int] | np.ndarray],
        sp: dict,
        ask: LogprobAsk = NO_LOGPROBS,
    ) -> list[GenResult]:
        """One non-streamed batched /generate; results in input order, checked against the
        request. Never retried (see the class comment)."""
        entries = sum(len(x) for x in batch) + len(batch) * int(sp.get("max_new_tokens") or 0)
        rids = request_ids(len(batch))
        data = await self.post_json(
            "/generate",
            self._body(batch, sp, ask, stream=False, rids=rids),
            max_bytes=_answer_cap(entries, ask.top_logprobs_num),
        )
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or len(data) != len(batch):
            n = len(data) if isinstance(data, list) else type(data).__name__
            raise self.fail(
                f"/generate returned {n} results for a batch of {len(batch)}", "wrong-count"
            )
        try:
            results = [parse_result(obj, i) for i, obj in enumerate(data)]
        except ParseError as e:
            raise self.fail(f"/generate: {e}", "malformed-answer") from None
        self.check_results(results, batch, sp, "/generate", rids, ask)
        return results

    async def generate_stream(
        self,
        batch: Sequence[Sequence[int] | np.ndarray],
        sp: dict,
        ask: LogprobAsk = NO_LOGPROBS,
        *,
        incremental: bool,
    ) -> AsyncIterator[Delta | list[GenResult]]:
        """Yields a Delta per new run of tokens, then the list of final results."""
        rids = request_ids(len(batch))
        body = orjson.dumps(self._body(batch, sp, ask, stream=True, rids=rids))
        max_new = sp.get("max_new_tokens")
        asm = StreamAssembler(
            len(batch), incremental, max_new if isinstance(max_new, int) else None
        )
        events = 0
        route = "/generate stream"
        try:
            async with self._client.stream(
                "POST", "/generate", content=body, headers=JSON_HEADERS
            ) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise self.http_error(resp, "/generate")
                done = False
                async for item in iter_events(iter_lines(resp.aiter_bytes())):
                    if item is DONE:
                        done = True
                        break
                    events += 1
                    if "error" in item and "meta_info" not in item:
                        err = item["error"]
                        msg = err.get("message", err) if isinstance(err, dict) else err
                        raise self.fail(
                            f"{route} error event after {events - 1} events: "
                            f"{one_line(self.redact(str(msg)))}",
                            "stream-error",
                        )
                    delta = asm.feed(item)
                    if delta is not None:
                        yield delta
                if not done:
                    raise self.fail(
                        f"{route} ended without [DONE] after {events} events", "no-done"
                    )
        except httpx.HTTPError as e:
            err = self.transport_error(e, route)
            err.message += f" after {events} events"
            raise err from None
        except (ParseError, SSEError) as e:
            msg = e.message if isinstance(e, SSEError) else str(e)
            raise self.fail(f"{route}: {msg} (after {events} events)", "malformed-stream") from None
        try:
            results = asm.results()
        except ParseError as e:
            raise self.fail(f"{route}: {e}", "malformed-stream") from None
        self.check_results(results, batch, sp, route, rids, ask)
        yield results

    async def tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Server-side tokenization: a prefill-only request returns the ids it scored."""
        body = {
            "text": list(texts),
            "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
            "return_logprob": True,
            "logprob_start_len": 0,
        }
        try:
            data = await self.post_json(
                "/generate",
                body,
                max_bytes=_answer_cap(sum(len(t.encode("utf-8")) + 8 for t in texts)),
            )
        except EngineError as e:
            if any(m in e.message for m in NO_TOKENIZER_MARKS):
                raise NoTokenizer(e.server, e.message, "no-tokenizer") from None
            raise
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or len(data) != len(texts):
            raise self.fail(
                "tokenizing via /generate returned the wrong number of results", "wrong-count"
            )
        try:
            results = [parse_result(obj, i) for i, obj in enumerate(data)]
        except ParseError as e:
            raise self.fail(f"tokenizing via /generate: {e}", "malformed-answer") from None
        out = []
        for i, (r, text) in enumerate(zip(results, texts, strict=True)):
            ids = r.input_logprob_ids
            if text.strip() and ids.size == 0:
                raise self.fail(
                    f"tokenizing via /generate: answer {i} has no input_token_logprobs "
                    "(the server ignored return_logprob or logprob_start_len=0)",
                    "malformed-answer",
                )
            if r.prompt_tokens and r.prompt_tokens != ids.size:
                raise self.fail(
                    f"tokenizing via /generate: answer {i} reports prompt_tokens="
                    f"{r.prompt_tokens} but scores {ids.size} tokens",
                    "length-mismatch",
                )
            out.append(ids)
        return out
