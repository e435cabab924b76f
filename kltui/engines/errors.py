"""Errors raised by engine clients; each renders as one line naming the server and the fault.

Callers catch by class, as with httpx: `TransportError` (the server could not be reached or
went away), `HTTPStatusError` and its `RouteNotFound` / `AuthRejected` / `BadRequest` /
`ServerError`, `MalformedAnswer`, `NotThisEngine`, ... `EngineError.of` picks the class of a
kind; `kind` stays the stable word that recordings, JSON and docs carry, and `transient` says
whether the same idempotent request may well succeed again.

Everything a server says is untrusted: it reaches terminals, recordings and reports, so an
error's text goes through `kltui.untrusted.one_line` here, and views escape their own markup.
"""

from __future__ import annotations

from kltui.untrusted import one_line

# 5xx answers after which a retry may succeed (the server restarting or overloaded)
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
# answers that mean the server went away, not that it refused this request
GONE_STATUSES = frozenset({502, 503, 504})


class EngineError(Exception):
    """A server or protocol fault. `kind` is stable and is what tests and docs refer to."""

    transient = False  # whether the same idempotent request may well succeed when retried

    def __init__(self, server: str, message: str, kind: str = "protocol") -> None:
        message = one_line(message, 600)
        super().__init__(message)
        self.server = server
        self.message = message
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.server}: {self.message}"

    @staticmethod
    def of(server: str, message: str, kind: str = "protocol") -> EngineError:
        """The error of this kind, of the class that callers catch it by."""
        if kind.startswith("http-") and kind[5:].isdigit():
            return HTTPStatusError.of_status(server, message, int(kind[5:]))
        return _BY_KIND.get(kind, EngineError)(server, message, kind)

    @property
    def gone(self) -> bool:
        """The server went away (unreachable, reset, timed out, or a gateway's 502-504)."""
        return False


class TransportError(EngineError):
    """The request did not get an answer: refused, timed out, reset (retried when idempotent)."""

    transient = True

    @property
    def gone(self) -> bool:
        """A server that cannot be reached has gone away."""
        return True


class Unreachable(TransportError):
    """Cannot connect."""


class RequestTimeout(TransportError):
    """No answer within the limit."""


class ConnectionReset(TransportError):
    """The connection closed or reset during the request."""


class HTTPStatusError(EngineError):
    """A non-2xx answer; `status` is its code."""

    status = 0

    def __init__(self, server: str, message: str, kind: str = "http-0") -> None:
        super().__init__(server, message, kind)
        self.status = int(kind[5:]) if kind[5:].isdigit() else 0

    @property
    def transient(self) -> bool:  # type: ignore[override]
        """500, 502, 503 and 504 may pass on a retry; other codes will not change."""
        return self.status in TRANSIENT_STATUSES

    @property
    def gone(self) -> bool:
        """A gateway's 502, 503 or 504: the server behind it went away."""
        return self.status in GONE_STATUSES

    @staticmethod
    def of_status(server: str, message: str, status: int) -> HTTPStatusError:
        """The error of an HTTP status, of the class that callers catch it by."""
        cls: type[HTTPStatusError] = HTTPStatusError
        if status in (404, 405):
            cls = RouteNotFound
        elif status in (401, 403):
            cls = AuthRejected
        elif status == 400:
            cls = BadRequest
        elif status >= 500:
            cls = ServerError
        return cls(server, message, f"http-{status}")


class RouteNotFound(HTTPStatusError):
    """404 or 405: the server has no such route (an older release, or another server)."""


class AuthRejected(HTTPStatusError):
    """401 or 403: a key is wanted, or this one is refused."""


class BadRequest(HTTPStatusError):
    """400: the server refused the request as sent."""


class ServerError(HTTPStatusError):
    """5xx: the server failed while answering."""


class Unhealthy(EngineError):
    """/health answered, not OK (a starting server says so for a while)."""

    transient = True


class NotThisEngine(EngineError):
    """A web page where the engine's route should be: another kind of server."""


class MalformedAnswer(EngineError):
    """An answer that is not what the protocol promises (shape, counts, order, size)."""


class MalformedJSON(MalformedAnswer):
    """An answer that is not JSON at all."""


class NoTokenizer(EngineError):
    """The server was started without a tokenizer and cannot tokenize text."""


class ServerRestarted(EngineError):
    """The server restarted or changed during a helper: its results are invalid."""


class FlushBusy(EngineError):
    """The server refused /flush_cache because requests are in flight (retry when idle)."""

    transient = True

    def __init__(self, server: str, detail: str) -> None:
        super().__init__(
            server,
            f"/flush_cache answered 400: server is busy ({one_line(detail, 120)}); another client "
            "is using it or a flush is running, retry when idle",
            kind="flush-busy",
        )


_BY_KIND: dict[str, type[EngineError]] = {
    "unreachable": Unreachable,
    "timeout": RequestTimeout,
    "reset": ConnectionReset,
    "transport": TransportError,
    "unhealthy": Unhealthy,
    "not-engine": NotThisEngine,
    "malformed-json": MalformedJSON,
    "malformed-answer": MalformedAnswer,
    "malformed-stream": MalformedAnswer,
    "too-large": MalformedAnswer,
    "wrong-count": MalformedAnswer,
    "wrong-order": MalformedAnswer,
    "no-done": MalformedAnswer,
    "length-mismatch": MalformedAnswer,
    "no-tokenizer": NoTokenizer,
    "server-restarted": ServerRestarted,
}
