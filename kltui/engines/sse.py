"""Server-sent events: `data: <json>` lines, blank-line separated, ending with `data: [DONE]`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import orjson

DONE = object()
# One SSE line holds one sample's cumulative snapshot: 4096 tokens with top-20 alternatives is
# a few MB. A line far beyond that is a server that never sends a newline; without a cap it
# would grow kltui's memory until the machine gives out.
MAX_LINE_BYTES = 256 * 2**20


class SSEError(Exception):
    """A line that is not SSE, or an event that is not a JSON object.

    A plain exception class: a frozen dataclass cannot take the __traceback__ that context
    managers (httpx's stream) set while it propagates, which turned this error into a TypeError.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def loads_json(data: bytes | str):
    """orjson, falling back to the standard parser only for the NaN/Infinity literals that
    Python-based servers emit: those values are data (a broken engine), not a broken stream.
    Raises orjson.JSONDecodeError (a ValueError) otherwise."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as first:
        probe = data if isinstance(data, bytes) else data.encode("utf-8", "replace")
        if b"NaN" not in probe and b"Infinity" not in probe:
            raise
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise first from None


def parse_data_line(line: str):
    """Returns the decoded JSON payload, DONE, or None for lines that carry no data."""
    if not line or line.startswith(":"):
        return None
    if not line.startswith("data:"):
        if line.startswith(("event:", "id:", "retry:")):
            return None
        raise SSEError(f"malformed SSE line {line[:80]!r}")
    payload = line[5:].strip()
    if payload == "[DONE]":
        return DONE
    try:
        obj = loads_json(payload)
    except ValueError as e:
        raise SSEError(f"malformed JSON in SSE event ({e})") from None
    if not isinstance(obj, dict):
        raise SSEError(f"SSE event is not a JSON object: {payload[:80]!r}")
    return obj


async def iter_lines(
    chunks: AsyncIterable[bytes], max_line: int = MAX_LINE_BYTES
) -> AsyncIterator[str]:
    """Splits a byte stream on newlines (a trailing CR is dropped), with a bound on line length.

    Bytes that are not UTF-8 become U+FFFD, so a torn multi-byte character cannot raise here;
    the JSON parser then decides whether the line still means anything.
    """
    parts: list[bytes] = []
    size = 0
    too_long = f"an SSE line is longer than {max_line} bytes without a newline"
    async for chunk in chunks:
        if b"\n" not in chunk:
            if chunk:
                parts.append(chunk)
                size += len(chunk)
                if size > max_line:
                    raise SSEError(too_long)
            continue
        lines = chunk.split(b"\n")
        if parts:
            lines[0] = b"".join(parts) + lines[0]
        tail = lines.pop()
        parts, size = ([tail], len(tail)) if tail else ([], 0)
        if size > max_line:
            raise SSEError(too_long)
        for raw in lines:
            if len(raw) > max_line:
                raise SSEError(too_long)
            yield raw.rstrip(b"\r").decode("utf-8", "replace")
    if parts:
        yield b"".join(parts).rstrip(b"\r").decode("utf-8", "replace")


async def iter_events(lines: AsyncIterable[str]) -> AsyncIterator[Any]:
    """The JSON payloads of a server-sent-event stream's data lines."""
    async for line in lines:
        item = parse_data_line(line.rstrip("\r"))
        if item is not None:
            yield item
