"""Shared HTTP plumbing: URL normalisation, auth header, error mapping, safe retries."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson

from kltui.engines.errors import EngineError
from kltui.engines.sse import loads_json
from kltui.errors import UsageError
from kltui.untrusted import one_line

T = TypeVar("T")
API_KEY_ENV = "KLTUI_API_KEY"
BASELINE_API_KEY_ENV = "KLTUI_BASELINE_API_KEY"
REDACTED = "<redacted>"


def normalize_url(spec: str, flag: str = "--server") -> str:
    """'localhost:30000' -> 'http://localhost:30000'; rejects what cannot be a server address.

    A server is its scheme, host and port: kltui adds /generate, /health, /v1/... itself, so
    a path would be requested as a prefix of every endpoint and fail later as a 404 per retry.
    """
    raw = spec.strip()
    expected = "expected HOST:PORT or http(s)://HOST:PORT"
    if (m := re.match(r"(?i)(https?)(//|:/(?!/))", raw)) is not None:
        # 'http//h:p' would otherwise read as the host 'http' with the path '//h:p'
        fixed = f"{m.group(1)}://{raw[m.end() :].lstrip('/')}"
        raise UsageError(f"{flag} {spec!r}: {expected} (did you mean {fixed}?)")
    url = raw if "://" in raw else f"http://{raw}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{flag} {spec!r}: {expected}")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise UsageError(f"{flag} {spec!r}: the port is not a number in 0-65535") from None
    if parts.path.strip("/") or parts.query or parts.fragment:
        extra = url[len(f"{parts.scheme}://{parts.netloc}") :]
        raise UsageError(
            f"{flag} {spec!r}: a path ({extra!r}) is not expected: give "
            f"{parts.scheme}://{parts.netloc} (kltui adds /generate, /health, /v1/... itself)"
        )
    return url.rstrip("/")


SGLANG_DEFAULT_PORT = 30000  # SGLang's ServerArgs.port, what `--port` defaults to


def sglang_url(spec: str, flag: str = "--server") -> tuple[str, str | None]:
    """normalize_url for an SGLang server, where a bare HOST means SGLang's default port (not
    http's 80); the note, when that default was applied, says so."""
    url = normalize_url(spec, flag)
    if "://" in spec or urlsplit(url).port is not None:
        return url, None
    parts = urlsplit(url)
    url = urlunsplit(parts._replace(netloc=f"{parts.netloc}:{SGLANG_DEFAULT_PORT}"))
    return url, f"{flag} {spec.strip()}: no port given, using SGLang's default: {url}"


def resolve_api_key(explicit: str | None) -> str | None:
    """The SGLang servers' key (--api-key or KLTUI_API_KEY); never sent to the vLLM baseline."""
    return explicit or os.environ.get(API_KEY_ENV) or None


def resolve_baseline_api_key() -> str | None:
    """The vLLM baseline's own key (KLTUI_BASELINE_API_KEY). No fallback to the SGLang key:
    a key goes only to the server it was issued for."""
    return os.environ.get(BASELINE_API_KEY_ENV) or None


def body_detail(resp: httpx.Response, redact: Callable[[str], str] = lambda s: s) -> str:
    """The server's own words from an error body (SGLang, FastAPI and vLLM shapes).

    Secrets are redacted before the text is cut to length, so a cut cannot leave half a key.
    """
    try:
        body = loads_json(resp.content)
    except ValueError:
        return one_line(redact(resp.text or resp.reason_phrase or ""), 200)
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body.get("message", body)))
        if isinstance(err, dict):
            err = err.get("message", err)
        text = err if isinstance(err, str) else _compact(err)
        return one_line(redact(text), 200)
    return one_line(redact(_compact(body)), 200)


def _compact(value) -> str:
    try:
        return orjson.dumps(value).decode()[:4096]
    except TypeError:  # integers beyond 64 bits, from the standard parser's NaN fallback
        return str(value)[:4096]


JSON_HEADERS = {"Content-Type": "application/json"}


class Traffic:
    """Requests sent by every engine client of this process: `kltui monitor` reports a probe's
    load as the difference of two readings (one probe runs at a time)."""

    requests = 0


async def _count_request(request: httpx.Request) -> None:
    Traffic.requests += 1


def _says_html(resp: httpx.Response) -> bool:
    return "text/html" in resp.headers.get("content-type", "").lower()


def is_html_page(resp: httpx.Response) -> bool:
    """Whether an answer is a web page (a static file server, a proxy's page), not an engine's
    JSON: said in one line instead of its markup."""
    return _says_html(resp) or _html_head(resp.content)


def _html_head(body: bytes) -> bool:
    return body[:256].lstrip().lower().startswith((b"<!doctype html", b"<html"))


class HttpEngine:
    """Base for engine clients: one AsyncClient, errors mapped to one-line EngineErrors."""

    retry_base_delay = 0.25
    # what a server that answers a web page where the engine's route should be is not
    product = "an engine server"

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
        self._api_key = api_key or None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout)),
            transport=transport,
            event_hooks={"request": [_count_request]},
        )
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def redact(self, text: str) -> str:
        """Servers echo headers back in error bodies; the key must never reach a screen or file."""
        if self._api_key and self._api_key in text:
            return text.replace(self._api_key, REDACTED)
        return text

    def error_detail(self, resp: httpx.Response) -> str:
        """The redacted, one-line detail of an error response's body."""
        return body_detail(resp, self.redact)

    def fail(self, message: str, kind: str = "protocol") -> EngineError:
        """An EngineError for this server with the message redacted."""
        return EngineError.of(self.url, self.redact(message), kind)

    def transport_error(
        self, exc: Exception, route: str, timeout: float | None = None
    ) -> EngineError:
        """`timeout` is the limit this request ran under, when it is not the client's."""
        detail = one_line(self.redact(str(exc)) or type(exc).__name__, 160)
        if isinstance(exc, httpx.ConnectError):
            return self.fail(f"cannot connect for {route} ({detail})", "unreachable")
        if isinstance(exc, httpx.ConnectTimeout):
            # dropped SYNs (a firewall, a host that is down) look like this, not like a refusal
            return self.fail(
                f"cannot connect for {route} (no answer within {self.connect_timeout:g} s)",
                "unreachable",
            )
        if isinstance(exc, httpx.TimeoutException):
            limit = self.timeout if timeout is None else timeout
            return self.fail(f"no answer to {route} within {limit:g} s", "timeout")
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return self.fail(f"connection closed or reset during {route} ({detail})", "reset")
        return self.fail(f"{route} failed: {detail}", "transport")

    def http_error(self, resp: httpx.Response, route: str, kind: str | None = None) -> EngineError:
        """An EngineError describing a non-2xx answer to `route`."""
        kind = kind or f"http-{resp.status_code}"
        if resp.status_code in (404, 405) and is_html_page(resp):
            return self.not_this_engine(route, resp.status_code)
        if not resp.content.strip():
            status = " ".join(
                filter(None, (str(resp.status_code), one_line(resp.reason_phrase, 40)))
            )
            return self.fail(f"{route} answered HTTP {status} with an empty body", kind)
        return self.fail(
            f"{route} answered HTTP {resp.status_code}: {self.error_detail(resp)}", kind
        )

    def not_this_engine(self, route: str, status: int) -> EngineError:
        """A web page where the engine's route should be: another kind of server."""
        return self.fail(
            f"not {self.product} ({route} answered {status}, an HTML page)", "not-engine"
        )

    async def post_json(self, route: str, body: object, *, max_bytes: int | None = None):
        """POST `body` as JSON to `route`; its JSON answer decoded (`request_json`)."""
        return await self.request_json(
            "POST", route, content=orjson.dumps(body), headers=JSON_HEADERS, max_bytes=max_bytes
        )

    async def request_json(self, method: str, route: str, *, max_bytes: int | None = None, **kw):
        """One request, its JSON answer decoded; a body past `max_bytes` stops the read."""
        try:
            async with self._client.stream(method, route, **kw) as resp:
                if resp.status_code >= 400 or _says_html(resp):
                    await resp.aread()
                    if resp.status_code >= 400:
                        raise self.http_error(resp, route)
                    raise self.not_this_engine(route, resp.status_code)
                parts, size = [], 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if max_bytes is not None and size > max_bytes:
                        raise self.fail(
                            f"{route} answer is larger than {max_bytes / 2**20:.0f} MiB, far more "
                            "than the request can produce",
                            "too-large",
                        )
                    parts.append(chunk)
        except httpx.HTTPError as e:
            raise self.transport_error(e, route) from None
        body = b"".join(parts)
        try:
            return loads_json(body)
        except ValueError as e:
            if _html_head(body):
                raise self.not_this_engine(route, resp.status_code) from None
            raise self.fail(f"{route} returned malformed JSON ({e})", "malformed-json") from None


async def with_backoff(
    op: Callable[[], Awaitable[T]],
    *,
    attempts: int = 4,
    base_delay: float = 0.25,
    retry_on: tuple[type[BaseException], ...] = (EngineError,),
    retry_if: Callable[[BaseException], bool] | None = None,
) -> T:
    """Retries an idempotent operation (health, info, flush) with exponential backoff.

    The error that ends the retries says how many attempts were made, so a reader knows the
    fault persisted and was not a single dropped packet.
    """
    t0 = time.monotonic()
    for i in range(attempts):
        try:
            return await op()
        except retry_on as e:
            last = i == attempts - 1 or (retry_if is not None and not retry_if(e))
            if last:
                if i and isinstance(e, EngineError):
                    e.message += f" (after {i + 1} attempts over {time.monotonic() - t0:.1f} s)"
                raise
            await asyncio.sleep(base_delay * (2**i))
    raise AssertionError("unreachable")


def is_transient(err: BaseException) -> bool:
    """Whether an error is worth retrying: the server is starting, restarting, overloaded or
    was briefly unreachable (`EngineError.transient`); a 4xx other than "busy" will not change."""
    return isinstance(err, EngineError) and err.transient
