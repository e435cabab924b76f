"""The HTTP face of the reference server: SGLang 0.5.23's native API subset, on Starlette.

Routes: POST/PUT /generate, GET/POST /flush_cache, GET /server_info (/get_server_info),
GET /model_info (/get_model_info), GET /health and /health_generate.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import socket
import sys
import time
from collections.abc import AsyncIterator

import orjson
import torch
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from kltui.reference.engine import GenRequest, Progress, Sampling
from kltui.reference.protocol import (
    ContractError,
    RequestError,
    contract_error,
    parse_generate,
    refuse_text,
)
from kltui.reference.responses import ItemState
from kltui.reference.state import ReferenceState, ServerSettings

log = logging.getLogger("kltui.reference")

FLUSH_TEXT = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)
HEALTH_CHECK_TIMEOUT = 20.0


def _json(content, status: int = 200) -> Response:
    return Response(orjson.dumps(content), status_code=status, media_type="application/json")


def _error(message: str, status: int = 400) -> Response:
    # http_server._create_error_response
    return _json({"error": {"message": message}}, status)


def _sse(obj) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _stream_error_json(message: str, status: int = 400, kind: str | None = None) -> dict:
    kind = kind or ("BadRequestError" if status < 500 else "InternalServerError")
    return {"error": {"message": message, "type": kind, "code": status, "retryable": False}}


def _validation_error(message: str) -> Response:
    # FastAPI's RequestValidationError, which SGLang turns into a 400 ErrorResponse.
    return _json(
        {"object": "error", "message": message, "type": "Bad Request", "param": None, "code": 400},
        400,
    )


# ---- routes ----


def _state(request: Request) -> ReferenceState:
    return request.app.state.ref


async def generate(request: Request) -> Response:
    st = _state(request)
    raw = await request.body()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return _validation_error(f"JSON decode error: {e.msg} (at char {e.pos})")
    problem = contract_error(body)
    if problem is not None:
        return _json({"error": problem}, 400)
    stream = body.get("stream") is True
    try:
        parsed = parse_generate(
            body,
            encode=refuse_text if st.settings.skip_tokenizer_init else st.tokenizer.encode,
            vocab_size=st.model.config.vocab_size,
            context_length=st.context_length,
        )
    except (RequestError, ContractError) as e:
        if stream:
            error = _sse(_stream_error_json(str(e), kind=getattr(e, "kind", None)))
            return StreamingResponse(
                iter([error, b"data: [DONE]\n\n"]), media_type="text/event-stream"
            )
        return _error(str(e))

    received = time.perf_counter()
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[int, Progress]] = asyncio.Queue()

    def sink(index: int, progress: Progress) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (index, progress))

    states = [ItemState(r, i, received) for i, r in enumerate(parsed.requests)]
    ticket = st.scheduler.submit(parsed.requests, sink)
    with_text = parsed.return_text_in_logprobs
    if parsed.stream:
        return StreamingResponse(
            _stream(st, states, queue, ticket, with_text, parsed.is_single),
            media_type="text/event-stream",
        )
    try:
        remaining = len(states)
        while remaining:
            index, progress = await queue.get()
            states[index].fold(progress)
            if states[index].finished:
                remaining -= 1
    except asyncio.CancelledError:
        st.scheduler.abort(ticket)
        raise
    for s in states:
        if s.aborted_with:
            return _error(s.aborted_with["message"], s.aborted_with.get("status_code", 500))
    objs = [st.renderer.response_json(s, with_text=with_text) for s in states]
    return _json(objs[0] if parsed.is_single else objs)


async def _stream(
    st: ReferenceState,
    states: list[ItemState],
    queue: asyncio.Queue,
    ticket,
    with_text: bool,
    is_single: bool,
) -> AsyncIterator[bytes]:
    incremental = st.settings.incremental_streaming_output
    remaining = len(states)
    try:
        while remaining:
            index, progress = await queue.get()
            s = states[index]
            s.fold(progress)
            if s.aborted_with:
                status = s.aborted_with.get("status_code", 500)
                yield _sse(_stream_error_json(s.aborted_with["message"], status))
                remaining -= 1
                continue
            interval = s.req.sampling.stream_interval or st.settings.stream_interval
            fresh = len(s.output_ids) - s.sent_tokens
            if s.finished or fresh >= interval or (s.chunks_sent == 0 and fresh > 0):
                chunk = st.renderer.response_json(
                    s,
                    with_text=with_text,
                    incremental=incremental,
                    index=None if is_single else index,
                    first_chunk=s.chunks_sent == 0,
                )
                yield _sse(chunk)
            if s.finished:
                remaining -= 1
        yield b"data: [DONE]\n\n"
    finally:
        if remaining:  # the client went away: stop spending steps on it
            st.scheduler.abort(ticket)


async def flush_cache(request: Request) -> Response:
    st = _state(request)
    try:
        timeout = float(request.query_params.get("timeout") or 0)
    except ValueError:
        return _validation_error("query parameter timeout: Input should be a valid number")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout, 0.0)
    while True:
        if st.scheduler.flush_if_idle():
            st.flushed()
            return Response(FLUSH_TEXT, status_code=200)
        if loop.time() >= deadline:
            return Response(FLUSH_TEXT, status_code=400)
        await asyncio.sleep(0.01)


async def server_info(request: Request) -> Response:
    return _json(_state(request).server_info_json())


async def loads(request: Request) -> Response:
    return _json(_state(request).loads_json())


async def metrics(request: Request) -> Response:
    st = _state(request)
    if not st.settings.enable_metrics:  # SGLang serves /metrics only with --enable-metrics
        return _json({"detail": "Not Found"}, 404)
    return Response(st.metrics(), media_type="text/plain; version=0.0.4")


async def model_info(request: Request) -> Response:
    return _json(_state(request).model_info_json())


async def health(request: Request) -> Response:
    """A one-token greedy generate through the scheduler, like SGLang's /health_generate."""
    st = _state(request)
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def sink(_index: int, _progress: Progress) -> None:
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(True))

    req = GenRequest(
        rid=f"HEALTH_CHECK_{time.time()}",
        input_ids=[st.bos_id],
        sampling=Sampling(temperature=0.0, max_new_tokens=1),
        use_cache=False,
    )
    ticket = st.scheduler.submit([req], sink)
    try:
        await asyncio.wait_for(done, HEALTH_CHECK_TIMEOUT)
    except TimeoutError:
        st.scheduler.abort(ticket)
        return Response(status_code=503)
    return Response(status_code=200)


async def _not_found(request: Request, exc: HTTPException) -> Response:
    # FastAPI's default body for routing errors, which SGLang inherits.
    return _json({"detail": exc.detail}, exc.status_code)


class ApiKeyMiddleware:
    """SGLang's add_api_key_middleware: Bearer key on every route but /health* and /metrics."""

    def __init__(self, app, api_key: str) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] != "OPTIONS":
            path = scope["path"]
            if not path.startswith(("/health", "/metrics")):
                auth = dict(scope["headers"]).get(b"authorization")
                if auth != self.expected:
                    await _json({"error": "Unauthorized"}, 401)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def create_app(state: ReferenceState):
    routes = [
        Route("/generate", generate, methods=["POST", "PUT"]),
        Route("/flush_cache", flush_cache, methods=["GET", "POST"]),
        Route("/server_info", server_info, methods=["GET"]),
        Route("/get_server_info", server_info, methods=["GET"]),
        Route("/model_info", model_info, methods=["GET"]),
        Route("/get_model_info", model_info, methods=["GET"]),
        Route("/v1/loads", loads, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/health_generate", health, methods=["GET"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _not_found})
    app.state.ref = state
    if state.settings.api_key:
        return ApiKeyMiddleware(app, state.settings.api_key)
    return app


# ---- process entry ----


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP,
    # and accepted sockets inherit it. Without it every keep-alive answer waited ~40 ms
    # (Nagle against the client's delayed ACK), which SGLang's uvicorn does not do.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(256)
    sock.set_inheritable(True)
    return sock


def ready_line(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"kltui reference server ready at http://{shown}:{port}"


def serve(settings: ServerSettings, launch_command: str | None = None) -> int:
    """Load, warm up, bind, serve until SIGTERM/SIGINT; prints the ready line once serving."""
    torch.set_num_threads(settings.threads)
    sock = _bind(settings.host, settings.port)
    port = sock.getsockname()[1]
    settings = dataclasses.replace(settings, port=port)
    state = ReferenceState(settings, launch_command or " ".join([sys.executable, *sys.argv]))
    state.warm_up()
    state.scheduler.start()
    config = uvicorn.Config(
        create_app(state),
        log_level=os.environ.get("KLTUI_REFERENCE_LOG_LEVEL", "warning"),
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=5,
    )
    server = uvicorn.Server(config)
    line = ready_line(settings.host, port)

    async def run() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.005)
        if server.started:
            print(line, flush=True)
        await task

    try:
        asyncio.run(run())
    finally:
        state.scheduler.stop()
        sock.close()
    return 0
