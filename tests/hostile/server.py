"""A hostile SGLang look-alike: a real HTTP server on 127.0.0.1 that misbehaves on demand.

It speaks enough of SGLang's native API for a whole kltui run (`/health`, `/server_info`,
`/model_info`, `/flush_cache`, batched `/generate` on `input_ids` or `text`, streamed as SSE with
`index` and cumulative or incremental logprobs, or not streamed), with response shapes copied
from the captured real responses in shared/reference/samples. Its "model" is a deterministic
function of the context, so a clean run is bit-exact (k3 == 0) and any difference is a fault
this server planted.

The server is raw asyncio rather than an ASGI app because several faults live below HTTP: a
TCP reset in the middle of a chunked body, a stream torn without its terminating chunk, a
response that never starts. One server serves one test:

    with HostileServer(fault="reset-mid-stream", phase="decode") as srv:
        ... run kltui against srv.url ...
        assert srv.counts["decode"] == 1   # the generate was not re-sent

Requests are classified into the phases kltui's helpers use (PHASES), and a fault hits the
`occurrence`-th request of its phase and the `times - 1` after it (times=0: all of them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

PHASES = (
    "health",
    "server_info",
    "model_info",
    "flush",
    "tokenize",
    "warm",
    "turn1",
    "decode",
    "prefill",
)
GENERATE_PHASES = ("tokenize", "warm", "turn1", "decode", "prefill")

# fault -> what the server does when the fault hits a request (the doc generator reads this)
FAULTS: dict[str, str] = {
    "none": "behaves like a healthy SGLang server",
    "hang": "accepts the request and never answers",
    "http-error": "answers with an HTTP error status (`status`), with or without a JSON body",
    "flush-busy": "/flush_cache answers 400 'pending requests', as SGLang does while busy",
    "sampling-400": "/generate answers 400 with SGLang's sampling_params validation message",
    "malformed-json": "answers 200 with a body that is not JSON",
    "reset-mid-stream": "sends a TCP reset after `after_events` stream events (at once if not streamed)",
    "close-mid-stream": "closes the connection mid-body after `after_events` stream events",
    "malformed-sse": "sends a line that is not SSE after `after_events` events",
    "no-done": "ends the stream cleanly but without `data: [DONE]`",
    "stream-error": 'sends SGLang\'s `data: {"error": ...}` event after `after_events` events',
    "abort": "finishes sample 0 with finish_reason {type: abort}",
    "fewer-logprobs": "drops the last logprob entry of sample 0",
    "more-logprobs": "adds one logprob entry to sample 0",
    "stray-output-logprob": "replay (max_new_tokens 0): sample 0's answer carries one "
    "output_token_logprobs entry and no output token, as real SGLang 0.5.23 did under load",
    "logprob-null": "sends null for one scored logprob of sample 0",
    "logprob-nan": "sends NaN (a bare JSON literal) for one scored logprob of sample 0",
    "logprob-inf": "sends Infinity for one scored logprob of sample 0",
    "logprob-neg-inf": "sends -Infinity for one scored logprob of sample 0",
    "logprob-9999": "sends -9999.0 (the -inf sentinel of vLLM's JSON) for one logprob",
    "token-mismatch": "replay: every input_token_logprobs id shifted by one position (a "
    "misaligned answer); decode: an output_token_logprobs id that disagrees with output_ids",
    "tail-shift": "replay: the ids of the last `shifted` positions (the generated ones, which "
    "kltui compares) shifted by one position, the prompt's ids as sent",
    "id-quirk": "replay: reports id 0 wherever the id of prompt position 1 or of the last "
    "generated token was sent (as real SGLang reports the last vocabulary id)",
    "wrong-order": "answers a batch in reverse order (streamed: with the indices reversed)",
    "rotate": "answer i is the whole answer to prompt i+1, as a proxy that swaps answers "
    "between concurrent requests (streamed: prompt i+1's chunks tagged with index i); with "
    "prompt_tokens=False the count that would betray it is not sent",
    "logprob-positive": "adds +10 to every logprob of sample 0 (decode and replay alike, so the "
    "two sides stay bit-identical): logprobs above 0, which no model gives",
    "topk-sum": "top-k alternatives whose probabilities sum above 1 (each logprob -0.05)",
    "missing-index": "drops `index` from the stream chunks of sample 1",
    "huge": "decodes 100k tokens for sample 0, whatever max_new_tokens says",
    "restart": "restarts: startup_time changes from this request on",
    "echo-auth": "answers 500 with the request's Authorization header in the error body",
}

HUGE_TOKENS = 100_000
BAD_VALUES = {
    "logprob-null": None,
    "logprob-nan": math.nan,
    "logprob-inf": math.inf,
    "logprob-neg-inf": -math.inf,
    "logprob-9999": -9999.0,
}
BOS = 1
STARTUP = 1_795_945_000.25


def encode_text(text: str) -> list[int]:
    """Byte-level tokenizer with a BOS, so `","` is [BOS, 47] as a BOS-adding tokenizer gives."""
    return [BOS] + [b + 3 for b in text.encode("utf-8")]


def next_token(ctx: list[int]) -> int:
    prev = ctx[-2] if len(ctx) > 1 else 7
    return (ctx[-1] * 1_000_003 + prev * 9176 + len(ctx) * 31) % 491 + 3


def logprob(ctx_len: int, last: int, tok: int) -> float:
    """A function of the context the token is scored in, so prefill and decode agree exactly."""
    return -(((last * 131 + tok * 7 + ctx_len) % 1000) / 137.0) - 0.01


def token_text(tok: int) -> str:
    return bytes([max(0, tok - 3) % 256]).decode("latin-1")


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    phase: str


@dataclass
class HostileServer:
    """See the module docstring. All knobs are keyword arguments; defaults are a healthy server.

    fault, phase: what goes wrong and on which kind of request (PHASES; None: every kind).
    occurrence, times: which requests of that phase are hit (1-based; times=0 means all).
    after_events: stream events sent before a mid-stream fault.
    status, with_body, error_message: for fault="http-error"; the message is the body's text.
    hang_s: how long "hang" holds a request (kltui's timeout should be shorter).
    stream_delay: seconds between stream events (holds the decode phase open).
    model_path, extra_info: what /server_info and /model_info report.
    drift: added to every prefill logprob, so k3 is nonzero (an honest alignment failure).
    incremental: stream deltas (SGLang's --incremental-streaming-output) instead of snapshots.
    stream_interval: tokens per stream event (more when coalescing a long answer).
    api_key: when set, every request without `Authorization: Bearer <api_key>` gets 401.
    shifted: how many last replay rows "tail-shift" shifts (the run's max_new_tokens).
    prompt_tokens: report meta_info.prompt_tokens (SGLang does; a proxy may strip it).
    echo_rid: answer with the request's `rid` as meta_info.id, as SGLang does (False: an id
    of the server's own, as a proxy that re-issues requests would).

    After a run: `counts` (requests per phase), `paths` (per route), `requests` (each with its
    headers and body), `hits` (the requests the fault hit), `streamed` (tokens per sample that
    each stream sent before it ended or broke).
    """

    fault: str = "none"
    phase: str | None = None
    occurrence: int = 1
    times: int = 1
    after_events: int = 2
    status: int = 500
    with_body: bool = True
    error_message: str | None = None
    hang_s: float = 30.0
    stream_delay: float = 0.0
    model_path: str = "/models/hostile-tiny"
    extra_info: dict = field(default_factory=dict)
    drift: float = 0.0
    incremental: bool = False
    stream_interval: int = 1
    api_key: str | None = None
    shifted: int = 6
    prompt_tokens: bool = True
    echo_rid: bool = True

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; choose from {', '.join(FAULTS)}")
        if self.phase is not None and self.phase not in PHASES:
            raise ValueError(f"unknown phase {self.phase!r}; choose from {', '.join(PHASES)}")
        self.counts: Counter[str] = Counter()
        self.paths: Counter[str] = Counter()
        self.requests: list[Request] = []
        self.hits: list[str] = []  # phases of the requests the fault hit
        # tokens streamed per sample index, per phase, before the stream ended or broke
        self.streamed: dict[str, dict[int, int]] = {}
        self.startup_time = STARTUP
        self._cache: list[list[int]] = []
        self._seen: dict[str, threading.Event] = {p: threading.Event() for p in PHASES}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task] = set()
        self.port = 0

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        """HOST:PORT, the way a user types it on the command line."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> HostileServer:
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=64)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="hostile-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("hostile server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return

        async def shutdown() -> None:
            self._server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()
        self._loop = None

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_for(self, phase: str, timeout: float = 10.0) -> bool:
        """Blocks until a request of `phase` has arrived (for interrupt tests)."""
        return self._seen[phase].wait(timeout)

    # ------------------------------------------------------------------ HTTP plumbing
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            req = await self._read_request(reader)
            if req is not None:
                await self._dispatch(req, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away (kltui timed out or was interrupted)
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0") or 0)
        raw = await reader.readexactly(n) if n else b""
        path, _, query = target.partition("?")
        body = json.loads(raw) if raw else None
        phase = self._classify(path, body)
        if phase == "tokenize" and body.get("text") in (",", [","]):
            # decode_cache_hit tokenizes "," just before its turn 1, which asks for logprobs
            # as SGLang's does: the next decode is turn 1, the one after it the scored turn 2.
            self._turn1_next = True
        elif phase == "decode" and getattr(self, "_turn1_next", False):
            self._turn1_next = False
            phase = "turn1"
        return Request(method, path, query, headers, body, phase)

    def _classify(self, path: str, body: Any) -> str:
        if path == "/health":
            return "health"
        if path in ("/server_info", "/get_server_info"):
            return "server_info"
        if path in ("/model_info", "/get_model_info"):
            return "model_info"
        if path == "/flush_cache":
            return "flush"
        if path == "/generate" and isinstance(body, dict):
            if "text" in body:
                # decode_cache_hit tokenizes "," just before its turn 1 (which asks for logprobs
                # like the decode, as SGLang's helper does): that tells the two apart
                self._turn1_next = body["text"] in (",", [","])
                return "tokenize"
            sp = body.get("sampling_params") or {}
            if sp.get("max_new_tokens", 128) == 0:
                return "prefill" if body.get("return_logprob") else "warm"
            if getattr(self, "_turn1_next", False) or not body.get("return_logprob"):
                self._turn1_next = False
                return "turn1"
            return "decode"
        return "unknown"

    @staticmethod
    async def _send(writer, status: int, body: bytes, ctype="application/json") -> None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Error"
        head = (
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        writer.write(head.encode("latin-1") + body)
        await writer.drain()

    async def _send_json(self, writer, obj, status: int = 200) -> None:
        # allow_nan: the NaN/Infinity faults must reach the wire as bare literals
        await self._send(writer, status, json.dumps(obj, allow_nan=True).encode())

    def _hit(self, phase: str) -> bool:
        if self.fault == "none" or (self.phase is not None and phase != self.phase):
            return False
        n = self.counts[phase]
        last = math.inf if self.times == 0 else self.occurrence + self.times - 1
        if self.occurrence <= n <= last:
            self.hits.append(phase)
            return True
        return False

    # ------------------------------------------------------------------ routes
    async def _dispatch(self, req: Request, writer) -> None:
        with self._lock:
            self.counts[req.phase] += 1
            self.paths[req.path] += 1
            self.requests.append(req)
        if req.phase in self._seen:
            self._seen[req.phase].set()
        if self.api_key and req.headers.get("authorization") != f"Bearer {self.api_key}":
            await self._send_json(writer, {"error": {"message": "Unauthorized"}}, 401)
            return
        hit = self._hit(req.phase)
        if hit and self.fault == "restart":
            self.startup_time += 1000.0
            self._cache.clear()  # a restarted server has a cold cache
            hit = False
        if hit and await self._generic_fault(req, writer):
            return
        if req.phase == "health":
            await self._send(writer, 200, b"")
        elif req.phase == "server_info":
            await self._send_json(writer, self.server_info())
        elif req.phase == "model_info":
            await self._send_json(writer, self.model_info())
        elif req.phase == "flush":
            if hit and self.fault == "flush-busy":
                msg = "Cache not flushed because there are pending requests. #queue-req: 0, "
                await self._send(writer, 400, (msg + "#running-req: 1").encode(), "text/plain")
                return
            self._cache.clear()
            await self._send(
                writer, 200, b"Cache flushed.\nPlease check backend logs.", "text/plain"
            )
        elif req.phase in GENERATE_PHASES:
            await self._generate(req, writer, hit)
        else:
            await self._send_json(writer, {"detail": "Not Found"}, 404)

    async def _generic_fault(self, req: Request, writer) -> bool:
        """Faults that replace the whole answer; returns True when one was sent."""
        f = self.fault
        if f == "hang":
            await asyncio.sleep(self.hang_s)
            return True
        if f == "http-error":
            msg = self.error_message or f"injected HTTP {self.status} on {req.path}"
            body = {"error": {"message": msg}}
            await self._send(
                writer, self.status, json.dumps(body).encode() if self.with_body else b""
            )
            return True
        if f == "sampling-400" and req.phase in GENERATE_PHASES:
            msg = (
                "1 validation error for SamplingParams\nsampling_seed\n  Extra inputs are not "
                "permitted [type=extra_forbidden, input_value=0, input_type=int]"
            )
            await self._send_json(writer, {"error": {"message": msg}}, 400)
            return True
        if f == "malformed-json" and req.phase != "health":
            await self._send(writer, 200, b'{"text": "abc", "output_ids": [1, 2, <html>')
            return True
        if f == "reset-mid-stream" and not (isinstance(req.body, dict) and req.body.get("stream")):
            self._reset(writer)  # a request that is not streamed is reset before its answer
            return True
        if f == "echo-auth":
            got = req.headers.get("authorization", "(none)")
            body = {"error": {"message": f"rejected request with Authorization: {got}"}}
            await self._send_json(writer, body, 500)
            return True
        return False

    def server_info(self) -> dict:
        info = {
            "model_path": self.model_path,
            "tokenizer_path": self.model_path,
            "served_model_name": self.model_path,
            "dtype": "bfloat16",
            "tp_size": 1,
            "dp_size": 1,
            "page_size": 1,
            "attention_backend": "fa3",
            "sampling_backend": "pytorch",
            "disable_radix_cache": False,
            "enable_deterministic_inference": True,
            "random_seed": 42,
            "disable_cuda_graph": False,
            "chunked_prefill_size": 8192,
            "stream_interval": self.stream_interval,
            "incremental_streaming_output": self.incremental,
            "speculative_algorithm": None,
            "context_length": 4 * HUGE_TOKENS,
            "max_total_num_tokens": 8 * HUGE_TOKENS,
            "startup_time": self.startup_time,
            "version": "0.5.23",
            "launch_command": f"python -m sglang.launch_server --model-path {self.model_path}",
            "internal_states": [{"last_gen_throughput": 0.0, "memory_usage": {"weight": 0.1}}],
        }
        info.update(self.extra_info)
        return info

    def model_info(self) -> dict:
        return {
            "model_path": self.model_path,
            "tokenizer_path": self.model_path,
            "served_model_name": self.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
        }

    # ------------------------------------------------------------------ the fake model
    def _cached(self, ids: list[int], start: int | None) -> int:
        best = 0
        for seq in self._cache:
            n = min(len(seq), len(ids))
            k = 0
            while k < n and seq[k] == ids[k]:
                k += 1
            best = max(best, k)
        best = min(best, len(ids) - 1)
        # SGLang caps the radix match at logprob_start_len when logprobs are asked from there
        return max(0, min(best, start) if start is not None and start >= 0 else best)

    def _decode(self, ids: list[int], n: int) -> tuple[list[int], list[float]]:
        ctx = list(ids)
        out, lps = [], []
        for _ in range(n):
            tok = next_token(ctx)
            lps.append(logprob(len(ctx), ctx[-1], tok))
            out.append(tok)
            ctx.append(tok)
        return out, lps

    def _input_logprobs(self, ids: list[int], start: int = 0, text: bool = False) -> list[list]:
        """Rows from `start` (SGLang's logprob_start_len); the first row has no logprob."""

        def txt(t: int) -> str | None:
            return token_text(t) if text else None

        rows: list[list] = [[None, ids[start], txt(ids[start])]]
        for k in range(start + 1, len(ids)):
            rows.append([logprob(k, ids[k - 1], ids[k]) + self.drift, ids[k], txt(ids[k])])
        return rows

    @staticmethod
    def _top_rows(rows: list[list], k: int, fault: str) -> list:
        """Top-k alternatives per input row: the scored token and k-1 far less likely ones
        (a sum below 1), or with "topk-sum" k alternatives of logprob -0.05 each."""
        out: list = [None]
        for lp, tok, text in rows[1:]:
            alts = [3 + (tok - 3 + j) % 491 for j in range(1, k)]
            if fault == "topk-sum":
                out.append([[-0.05, t, text] for t in [tok, *alts]])
            else:
                out.append([[lp, tok, text]] + [[-20.0 - j, t, text] for j, t in enumerate(alts)])
        return out

    def _meta(self, rid: str, prompt_len: int, out_len: int, done: bool) -> dict:
        meta = {
            "id": rid,
            "finish_reason": {"type": "length", "length": out_len} if done else None,
            "prompt_tokens": prompt_len,
            "weight_version": "default",
            "num_retractions": 0,
        }
        if not self.prompt_tokens:
            del meta["prompt_tokens"]
        return meta

    def _rid(self, body: dict, phase: str, i: int) -> str:
        sent = body.get("rid")
        if self.echo_rid and isinstance(sent, list) and i < len(sent):
            return sent[i]
        if self.echo_rid and isinstance(sent, str):
            return sent
        return f"{phase}-{i:04d}-{id(self) % 9973:04x}"

    async def _generate(self, req: Request, writer, hit: bool) -> None:
        body = req.body
        sp = body.get("sampling_params") or {}
        if req.phase == "tokenize":
            texts = body["text"] if isinstance(body["text"], list) else [body["text"]]
            batch = [encode_text(t) for t in texts]
        else:
            batch = [list(x) for x in body["input_ids"]]
        max_new = int(sp.get("max_new_tokens", 128))
        logprobs = bool(body.get("return_logprob"))
        start = body.get("logprob_start_len", -1) if logprobs else None
        # the extras request sends one start per prompt
        starts = start if isinstance(start, list) else [start] * len(batch)
        fault = self.fault if hit else "none"
        items = []
        for i, ids in enumerate(batch):
            cached = self._cached(ids, starts[i])
            n = HUGE_TOKENS if fault == "huge" and i == 0 else max_new
            out, lps = self._decode(ids, n)
            if fault == "logprob-positive" and i == 0:
                lps = [lp + 10.0 for lp in lps]
            items.append((i, ids, out, lps, cached))
        for _, ids, out, _, _ in items:
            self._cache.append(ids + out)
        if body.get("stream"):
            await self._stream(req, writer, items, logprobs, fault)
        else:
            answers = [self._answer(it, starts[it[0]], fault, req) for it in items]
            if fault == "wrong-order":
                answers.reverse()
            elif fault == "rotate":
                answers = answers[1:] + answers[:1]
            await self._send_json(writer, answers)

    def _answer(self, item, start, fault: str, req: Request) -> dict:
        i, ids, out, lps, cached = item
        body, phase = req.body, req.phase
        logprobs = bool(body.get("return_logprob"))
        meta = self._meta(self._rid(body, phase, i), len(ids), len(out), True)
        if fault == "abort" and i == 0:
            meta["finish_reason"] = {"type": "abort", "message": "injected abort: out of memory"}
        if logprobs:
            # kltui asks from position 0 (replay, tokenize), not at all (-1, decode), or from
            # a window's start (the drill-down's extras)
            text = bool(body.get("return_text_in_logprobs"))
            in_rows = (
                self._input_logprobs(ids, start, text)
                if isinstance(start, int) and 0 <= start < len(ids)
                else []
            )
            if fault == "logprob-positive" and i == 0:
                for row in in_rows[1:]:
                    row[0] += 10.0
            if body.get("top_logprobs_num") and in_rows:
                meta["input_top_logprobs"] = self._top_rows(
                    in_rows, int(body["top_logprobs_num"]), fault
                )
            out_rows = [[lp, t, None] for lp, t in zip(lps, out, strict=True)]
            if i == 0 and phase == "prefill" and fault == "stray-output-logprob" and not out:
                out_rows.append([-0.25, 5, None])
            if i == 0 and phase == "prefill" and fault == "token-mismatch":
                ids = [r[1] for r in in_rows]
                for k in range(1, len(in_rows)):
                    in_rows[k][1] = ids[k - 1]
            elif i == 0 and phase == "prefill" and fault == "tail-shift":
                sent = [r[1] for r in in_rows]
                for k in range(max(1, len(sent) - self.shifted), len(sent)):
                    in_rows[k][1] = sent[k - 1]
            elif i == 0 and phase == "prefill" and fault == "id-quirk" and len(in_rows) > 2:
                odd = {in_rows[1][1], in_rows[-1][1]}
                for row in in_rows:
                    if row[1] in odd:
                        row[1] = 0
            elif i == 0 and phase == "prefill":
                # the last row scores a generated token, so it is one kltui compares
                self._plant(fault, in_rows, len(in_rows) - 1)
            elif i == 0:
                self._plant(fault, out_rows, 1)
            meta["input_token_logprobs"] = in_rows
            meta["output_token_logprobs"] = out_rows
            meta["output_token_logprobs_length"] = len(out_rows)
        meta.update(
            {
                "reasoning_tokens": 0,
                "completion_tokens": len(out),
                "cached_tokens": cached,
                "weight_versions": [{"version": "default", "start": 0, "end": len(out)}],
                "cached_tokens_details": None,
                "dp_rank": None,
                "e2e_latency": 0.0123,
            }
        )
        return {"text": "".join(token_text(t) for t in out), "output_ids": out, "meta_info": meta}

    @staticmethod
    def _plant(fault: str, rows: list[list], pos: int) -> None:
        """Damages sample 0's logprob rows; `pos` is the row a bad value goes to."""
        if not rows:
            return
        if fault == "fewer-logprobs":
            rows.pop()
        elif fault == "more-logprobs":
            rows.append(list(rows[-1]))
        elif fault in BAD_VALUES and 0 <= pos < len(rows):
            rows[pos][0] = BAD_VALUES[fault]
        elif fault == "token-mismatch":
            rows[-1][1] = rows[-1][1] + 1

    async def _stream(self, req: Request, writer, items, logprobs: bool, fault: str) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        sent: dict[int, int] = {}
        self.streamed[req.phase] = sent
        n = len(items)
        longest = max((len(it[2]) for it in items), default=0)
        # coalesce like SGLang under load, so 100k tokens take tens of events, not 100k
        step = max(self.stream_interval, -(-longest // 32))
        events = 0

        async def chunk(data: bytes) -> None:
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()

        async def event(obj) -> None:
            await chunk(b"data: " + json.dumps(obj, allow_nan=True).encode() + b"\n\n")

        for upto in range(step, longest + step, step):
            for i, ids, out, lps, cached in items:
                have = min(upto, len(out))
                prev = min(upto - step, len(out))
                if have == prev and upto > step:
                    continue
                if events == self.after_events:
                    if fault == "reset-mid-stream":
                        self._reset(writer)
                        return
                    if fault == "close-mid-stream":
                        writer.write(b'40\r\ndata: {"text": "tor')
                        await writer.drain()
                        writer.transport.abort()
                        return
                    if fault == "malformed-sse":
                        await chunk(b"dta: {this is not an event}\n\n")
                        await chunk(b"")
                        return
                    if fault == "stream-error":
                        text = (
                            self.error_message or "injected: CUDA error: an illegal memory access"
                        )
                        err = {"message": text}
                        await event({"error": {**err, "type": "InternalServerError", "code": 500}})
                        await chunk(b"data: [DONE]\n\n")
                        await chunk(b"")
                        return
                lo = prev if self.incremental else 0
                obj = self._chunk(req, i, ids, out, lps, cached, lo, have, logprobs, fault)
                if fault == "wrong-order":
                    obj["index"] = n - 1 - i
                elif fault == "rotate":
                    obj["index"] = (i - 1) % n
                if fault == "missing-index" and i == 1:
                    del obj["index"]
                await event(obj)
                sent[i] = have
                events += 1
                if self.stream_delay:
                    await asyncio.sleep(self.stream_delay)
        if fault != "no-done":
            await chunk(b"data: [DONE]\n\n")
        await chunk(b"")

    def _chunk(self, req, i, ids, out, lps, cached, lo, have, logprobs, fault) -> dict:
        done = have == len(out)
        meta = self._meta(self._rid(req.body, req.phase, i), len(ids), have, done)
        if done and fault == "abort" and i == 0:
            meta["finish_reason"] = {"type": "abort", "message": "injected abort: out of memory"}
        if logprobs:
            rows = [[lp, t, None] for lp, t in zip(lps[lo:have], out[lo:have], strict=True)]
            if i == 0 and have >= 2:
                self._plant(fault, rows, 1 - lo)  # absolute position 1 of the output
            meta["input_token_logprobs"] = []
            meta["output_token_logprobs"] = rows
            meta["output_token_logprobs_length"] = len(rows)
        meta.update(
            {
                "reasoning_tokens": 0,
                "completion_tokens": have,
                "cached_tokens": cached,
                "cached_tokens_details": None,
                "dp_rank": None,
            }
        )
        if done:
            meta["e2e_latency"] = 0.0157
        text = "".join(token_text(t) for t in out[lo:have])
        return {"text": text, "output_ids": out[lo:have], "meta_info": meta, "index": i}

    @staticmethod
    def _reset(writer) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # linger 0: close() sends RST instead of FIN, what a crashed server's kernel does
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()


def refused_url() -> str:
    """A 127.0.0.1 address where nothing listens (the port was just free)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def wait_until(pred, timeout: float = 10.0, step: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()
