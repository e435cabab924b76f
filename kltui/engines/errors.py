"""Errors raised by engine clients; each renders as one line naming the server and the fault.

Everything a server says is untrusted: it reaches terminals (escape sequences can retitle a
window or rewrite what is on screen), recordings and reports. `escape_controls` makes it inert
text; views still escape markup themselves, since only they know their markup language.
"""

from __future__ import annotations

import re

# C0 (tab kept: harmless), DEL, C1 (0x9b is CSI on 8-bit terminals), line and paragraph
# separators (they break "one line"), bidi overrides and isolates (they reorder what is shown).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escape_one(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape_controls(text: str) -> str:
    """Control and reordering characters as visible escapes (`\\x1b`, `\\u202e`)."""
    return _CONTROL.sub(_escape_one, text)


def clean(text: object, limit: int = 240) -> str:
    """Server text is untrusted: one line, control characters escaped, bounded length."""
    text = escape_controls(str(text).replace("\r\n", " ").replace("\n", " "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sanitize(obj: object, redact=None, depth: int = 0) -> object:
    """Every string in a decoded JSON value with controls escaped (and secrets redacted).

    Applied to /server_info and /model_info, whose strings (model_path, version, ...) are shown
    on screen and recorded. Nesting beyond what any real server sends is cut, not recursed into.
    """
    if isinstance(obj, str):
        return escape_controls(redact(obj) if redact else obj)
    if depth > 32:
        return None
    if isinstance(obj, dict):
        return {
            sanitize(str(k), redact, depth + 1): sanitize(v, redact, depth + 1)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [sanitize(v, redact, depth + 1) for v in obj]
    return obj


class EngineError(Exception):
    """A server or protocol fault. `kind` is stable and is what tests and docs refer to."""

    def __init__(self, server: str, message: str, kind: str = "protocol") -> None:
        message = clean(message, 600)
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
