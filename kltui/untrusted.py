"""Untrusted text (model output, server strings, file names, anything read from a recording)
made inert for every place kltui shows it: the terminal, Textual and Rich, HTML, Markdown and
XML. This is the only module that knows which characters are dangerous.

Dangerous everywhere: C0 and C1 controls and DEL (ESC sequences retitle windows and rewrite
the screen; 0x9b is CSI on 8-bit terminals), line and paragraph separators (they break "one
line"), zero-width characters and bidi overrides and isolates (they hide or reorder what is
shown). Each is spelled out as a visible escape (`\\x1b`, `\\u202e`, `\\n`), so what was sent
can still be read. Markup is never parsed: Textual gets `rich.text.Text`, console markup is
escaped, HTML and Markdown get their own escaping on top.
"""

from __future__ import annotations

import html
import re
from typing import Any

from rich.markup import escape as _rich_escape
from rich.style import Style
from rich.text import Text

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _spell(m: re.Match) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _cut(s: str, limit: int | None) -> str:
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s


def escape_controls(value: object, limit: int | None = None, keep: str = "") -> str:
    """`value` as text with every dangerous character spelled out (`keep` names characters to
    leave as they are, such as newlines in an HTML paragraph); cut to `limit` with an ellipsis."""
    s = str(value)
    sub = _spell if not keep else (lambda m: m.group() if m.group() in keep else _spell(m))
    return _cut(CONTROL.sub(sub, s), limit)


def one_line(value: object, limit: int = 240) -> str:
    """Server text for an error message or log line: newlines become spaces, the rest escaped."""
    text = str(value).replace("\r\n", " ").replace("\n", " ")
    return escape_controls(text, limit)


def sanitize(obj: Any, redact=None, depth: int = 0) -> Any:
    """Every string in a decoded JSON value escaped (and secrets redacted).

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


# ------------------------------------------------------------------ terminal: Textual and Rich


def safe(value: object, style: str | Style = "", limit: int | None = None) -> Text:
    """A Text that shows `value` literally: no markup, no control sequences."""
    return Text(escape_controls(value, limit), style=style, no_wrap=False)


# Text of a token nobody fetched (outside the extras request's windows): dim and italic, so it
# never reads as a token that is empty or whitespace (real spaces show as "␣").
UNKNOWN_TOKEN_TEXT = "(no text)"


def token_repr(text: str | None) -> Text:
    """Token text with its spaces made visible, as tokenizers' leading spaces matter; None (text
    not known) is a dim "(no text)" marker, never an empty cell."""
    if text is None:
        return Text(UNKNOWN_TOKEN_TEXT, style="dim italic")
    return Text(escape_controls(text).replace(" ", "␣"))


def console_markup(value: object, limit: int | None = None) -> str:
    """For a Rich console string that carries markup of kltui's own: `[` cannot open a tag."""
    return _rich_escape(escape_controls(value, limit))


# ------------------------------------------------------------------ documents


def html_text(value: object) -> str:
    """HTML text or attribute value (newlines and tabs are harmless there and kept)."""
    return html.escape(escape_controls(value, keep="\t\n"), quote=True)


# Characters that are active mid-line in GitHub Markdown; line-start markers (-, +, 1.) never
# apply because untrusted text never starts a line in kltui's reports.
_MD_ACTIVE = re.compile(r"([\\`*_{}\[\]<>#|~@$&])")
_MD_SPACE = re.compile(CONTROL.pattern + "+")


def md_text(value: object) -> str:
    """One line of literal Markdown text: dangerous characters become spaces (a table row must
    stay one line), and every character active somewhere in GitHub Markdown (tables, links,
    HTML, mentions, math) is escaped."""
    return _MD_ACTIVE.sub(r"\\\1", _MD_SPACE.sub(" ", str(value)))


# What XML 1.0 cannot hold at all (ElementTree escapes markup itself).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object) -> str:
    """XML text or attribute value: escaped like everywhere else (tabs and newlines kept),
    and whatever XML 1.0 cannot hold spelled out too."""
    text = escape_controls(value, keep="\t\n\r")
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
