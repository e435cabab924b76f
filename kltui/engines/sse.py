"""Server-sent events: `data: <json>` lines, blank-line separated, ending with `data: [DONE]`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson

DONE = object()


@dataclass(frozen=True, slots=True)
class SSEError(Exception):
    message: str


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
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError as e:
        raise SSEError(f"malformed JSON in SSE event ({e})") from None
    if not isinstance(obj, dict):
        raise SSEError(f"SSE event is not a JSON object: {payload[:80]!r}")
    return obj


async def iter_events(lines: AsyncIterator[str]) -> AsyncIterator[object]:
    async for line in lines:
        item = parse_data_line(line.rstrip("\r"))
        if item is not None:
            yield item
