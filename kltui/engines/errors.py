"""Errors raised by engine clients; each renders as one line naming the server and the fault."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean(text: str, limit: int = 240) -> str:
    """Server text is untrusted: one line, control characters escaped, bounded length."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text)).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EngineError(Exception):
    """A server or protocol fault. `kind` is stable and is what tests and docs refer to."""

    def __init__(self, server: str, message: str, kind: str = "protocol") -> None:
        super().__init__(message)
        self.server = server
        self.message = message
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.server}: {self.message}"


class FlushBusy(EngineError):
    def __init__(self, server: str, detail: str) -> None:
        super().__init__(
            server,
            f"/flush_cache answered 400: server is busy ({clean(detail, 120)}); another client "
            "is using it or a flush is running, retry when idle",
            kind="flush-busy",
        )


class UsageError(Exception):
    """Bad command line, config or input file: exit code 2."""
