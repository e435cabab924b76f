"""Shared HTTP plumbing: URL normalisation, auth header, error mapping, safe retries."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
import orjson

from kltui.engines.errors import EngineError, UsageError, clean

T = TypeVar("T")
API_KEY_ENV = "KLTUI_API_KEY"


def normalize_url(spec: str) -> str:
    """'localhost:30000' -> 'http://localhost:30000'; rejects what cannot be a server address."""
    raw = spec.strip()
    url = raw if "://" in raw else f"http://{raw}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--server {spec!r}: expected HOST:PORT or http(s)://HOST:PORT")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise UsageError(f"--server {spec!r}: the port is not a number in 0-65535") from None
    return url.rstrip("/")


def resolve_api_key(explicit: str | None) -> str | None:
    return explicit or os.environ.get(API_KEY_ENV) or None


def error_detail(resp: httpx.Response) -> str:
    """The server's own words from an error body (SGLang, FastAPI and vLLM shapes)."""
    try:
        body = orjson.loads(resp.content)
    except orjson.JSONDecodeError:
        return clean(resp.text or resp.reason_phrase or "", 200)
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body.get("message", body)))
        if isinstance(err, dict):
            err = err.get("message", err)
        return clean(err if isinstance(err, str) else orjson.dumps(err).decode(), 200)
    return clean(str(body), 200)


class HttpEngine:
    """Base for engine clients: one AsyncClient, errors mapped to one-line EngineErrors."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 600.0,
        connect_timeout: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = normalize_url(base_url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            transport=transport,
        )
        self.timeout = timeout

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def fail(self, message: str, kind: str = "protocol") -> EngineError:
        return EngineError(self.url, message, kind)

    def transport_error(self, exc: Exception, route: str) -> EngineError:
        if isinstance(exc, httpx.ConnectError):
            return self.fail(f"cannot connect for {route} ({clean(str(exc), 80)})", "unreachable")
        if isinstance(exc, httpx.TimeoutException):
            return self.fail(f"no answer to {route} within {self.timeout:g} s", "timeout")
        if isinstance(exc, httpx.RemoteProtocolError):
            return self.fail(f"connection closed during {route} ({clean(str(exc), 80)})", "reset")
        return self.fail(f"{route} failed: {clean(str(exc), 120)}", "transport")

    async def request_json(self, method: str, route: str, **kw):
        try:
            resp = await self._client.request(method, route, **kw)
        except httpx.HTTPError as e:
            raise self.transport_error(e, route) from None
        if resp.status_code >= 400:
            raise self.fail(
                f"{route} answered HTTP {resp.status_code}: {error_detail(resp) or '(no body)'}",
                f"http-{resp.status_code}",
            )
        try:
            return orjson.loads(resp.content)
        except orjson.JSONDecodeError as e:
            raise self.fail(f"{route} returned malformed JSON ({e})", "malformed-json") from None


async def with_backoff(
    op: Callable[[], Awaitable[T]],
    *,
    attempts: int = 4,
    base_delay: float = 0.25,
    retry_on: tuple[type[BaseException], ...] = (EngineError,),
) -> T:
    """Retries an idempotent operation (health, info, flush) with exponential backoff."""
    for i in range(attempts):
        try:
            return await op()
        except retry_on:
            if i == attempts - 1:
                raise
            await asyncio.sleep(base_delay * (2**i))
    raise AssertionError("unreachable")
