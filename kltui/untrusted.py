"""Untrusted text (model output, server strings, file names) made safe to show.

Everything from a server or a recording is shown through `rich.text.Text` (never parsed as
markup) after control characters are spelled out, so `\\x1b[31m` cannot recolour the terminal
and a newline inside a token cannot break a table row.
"""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Text

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _spell(m: re.Match) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(value: object, limit: int | None = None) -> str:
    s = _CONTROL.sub(_spell, str(value))
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s


def safe(value: object, style: str | Style = "", limit: int | None = None) -> Text:
    """A Text that shows `value` literally: no markup, no control sequences."""
    return Text(escape_controls(value, limit), style=style, no_wrap=False)


def token_repr(text: str | None) -> Text:
    """Token text with its spaces made visible, as tokenizers' leading spaces matter."""
    if text is None:
        return Text("")
    shown = escape_controls(text).replace(" ", "␣")
    return Text(shown)
