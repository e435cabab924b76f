"""Errors raised by engine clients; each renders as one line naming the server and the fault.

Everything a server says is untrusted: it reaches terminals, recordings and reports, so an
error's text goes through `kltui.untrusted.one_line` here, and views escape their own markup.
"""

from __future__ import annotations

from kltui.untrusted import one_line


class EngineError(Exception):
    """A server or protocol fault. `kind` is stable and is what tests and docs refer to."""

    def __init__(self, server: str, message: str, kind: str = "protocol") -> None:
        message = one_line(message, 600)
        super().__init__(message)
        self.server = server
        self.message = message
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.server}: {self.message}"


class FlushBusy(EngineError):
    """The server refused /flush_cache because requests are in flight (retry when idle)."""

    def __init__(self, server: str, detail: str) -> None:
        super().__init__(
            server,
            f"/flush_cache answered 400: server is busy ({one_line(detail, 120)}); another client "
            "is using it or a flush is running, retry when idle",
            kind="flush-busy",
        )
