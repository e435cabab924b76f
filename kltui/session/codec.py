"""Events <-> JSON-safe dicts.

Per-token arrays are written as "<dtype>:<base64 of little-endian bytes>" strings ("f4:..." or
"f8:..." for logprobs, "i2:..."/"i4:..."/"i8:..." for token ids): exact to the bit, NaN/inf
included, and an order of magnitude faster to load than JSON number lists (replay of a
1000 x 4096 session must load in about a second). Each array takes the narrowest code that holds
every value exactly: SGLang computes logprobs in float32, so "f4" round-trips them bit for bit
at half the size; an array with any value float32 cannot hold exactly stays "f8". Readers also
accept plain JSON lists. Other non-finite floats (in summaries)
travel as {"$float": "inf" | "-inf" | "nan"}, so a string that happens to read "nan" (a
message, a token) stays a string. `kltui check --json` and `kltui dumps --json` write non-finite
numbers the same way (`tag_floats`): one encoding that every strict JSON parser accepts.

RunStarted's names changed once (one name per concept, docs/JSON.md): the run config's
`streamed`/`streamed_interval` became `stream`/`stream_interval` (what the run did), and a
server's derived `cuda_graph` gave way to SGLang's own `disable_cuda_graph`. `decode` reads the
old names into the new ones, so older recordings replay and report as before.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from typing import Any

import numpy as np

from kltui.session.events import EVENT_TYPES, Event

_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_INT_ARRAYS = {"token_ids"}
_FLOAT_ARRAYS = {"lp_a", "lp_b", "output_logprobs", "lp"}


_DTYPES = {"f4": "<f4", "f8": "<f8", "i2": "<i2", "i4": "<i4", "i8": "<i8"}


def _int_code(a: np.ndarray) -> str:
    if not a.size:
        return "i4"
    lo, hi = int(a.min()), int(a.max())
    if -(2**15) <= lo and hi < 2**15:
        return "i2"
    if -(2**31) <= lo and hi < 2**31:
        return "i4"
    return "i8"


def _float_code(a: np.ndarray) -> str:
    a64 = a.astype(np.float64, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        back = a64.astype(np.float32).astype(np.float64)
    # Compared as bytes, so -0.0, inf and the NaN payloads count too: not one bit may change.
    return "f4" if back.tobytes() == a64.tobytes() else "f8"


def array_out(arr: np.ndarray, kind: str) -> str:
    """An array as the recording's compact text (dtype code, then base64)."""
    a = np.asarray(arr)
    code = _int_code(a) if kind == "i" else _float_code(a)
    return f"{code}:" + base64.b64encode(a.astype(_DTYPES[code]).tobytes()).decode("ascii")


def array_in(value, dtype) -> np.ndarray:
    """An array read back from the recording's text (or from a plain list)."""
    if isinstance(value, str):
        code, _, payload = value.partition(":")
        if code not in _DTYPES:
            raise ValueError(f"unknown array encoding {code!r}")
        raw = np.frombuffer(base64.b64decode(payload, validate=True), dtype=_DTYPES[code])
        return raw.astype(dtype)
    # plain JSON lists: non-finite values as {"$float": ...}, or the strings "inf", "-inf" and
    # "nan" that numpy parses itself
    if isinstance(value, list):
        value = restore_float(value)
    arr = np.asarray(value, dtype=dtype)
    if arr.ndim != 1:
        raise ValueError(f"expected a list of numbers, got {type(value).__name__}")
    return arr


def encode(event: Event) -> dict:
    """An event as the JSON object of one recording line."""
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in dataclasses.fields(event):
        v = getattr(event, f.name)
        if f.name in _INT_ARRAYS:
            out[f.name] = array_out(v, "i")
        elif f.name in _FLOAT_ARRAYS:
            out[f.name] = array_out(v, "f")
        else:
            out[f.name] = tag_floats(v)
    return out


_FLOAT_TAG = "$float"


def tag_floats(value: Any) -> Any:
    """Non-finite floats become {"$float": "nan" | "inf" | "-inf"} (strict JSON, and unambiguous:
    a string reading "nan" stays a string); numpy scalars become Python numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return {_FLOAT_TAG: "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, dict):
        return {k: tag_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [tag_floats(v) for v in value]
    if isinstance(value, np.generic):
        return tag_floats(value.item())
    return value


def restore_float(value: Any) -> Any:
    """A JSON value with the tagged non-finite floats turned back into floats."""
    if isinstance(value, dict):
        if len(value) == 1 and _FLOAT_TAG in value and value[_FLOAT_TAG] in _NON_FINITE:
            return _NON_FINITE[value[_FLOAT_TAG]]
        return {k: restore_float(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore_float(v) for v in value]
    return value


def decode(obj: dict) -> Event:
    """Inverse of encode(); raises KeyError/TypeError/ValueError on a malformed record."""
    cls = EVENT_TYPES[obj["type"]]
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in obj:
            if f.name == "at":  # older recordings: unknown, never the time of reading
                kwargs["at"] = None
            continue
        v = obj[f.name]
        if f.name in _INT_ARRAYS:
            kwargs[f.name] = array_in(v, np.int64)
        elif f.name in _FLOAT_ARRAYS:
            kwargs[f.name] = array_in(v, np.float64)
        else:
            kwargs[f.name] = restore_float(v)
    if cls.__name__ == "RunStarted":
        kwargs = _renamed(kwargs)
    return cls(**kwargs)


# old name -> current name (docs/JSON.md, "One name per concept")
_CONFIG_RENAMES = {"streamed": "stream", "streamed_interval": "stream_interval"}


def _renamed(kwargs: dict) -> dict:
    """RunStarted of an older recording, under today's names."""
    config = kwargs.get("config")
    if isinstance(config, dict) and "streamed" in config:
        # the old `stream` was the option (null: stream only in the TUI); `streamed` what ran
        kept = {k: v for k, v in config.items() if k not in _CONFIG_RENAMES.values()}
        renamed = {_CONFIG_RENAMES.get(k, k): v for k, v in kept.items()}
        renamed.setdefault("stream_interval", None)
        kwargs["config"] = renamed
    servers = kwargs.get("servers")
    if isinstance(servers, list):
        kwargs["servers"] = [_server_renamed(s) for s in servers]
    return kwargs


def _server_renamed(s: Any) -> Any:
    if not isinstance(s, dict) or "cuda_graph" not in s:
        return s
    s = dict(s)
    graphs = s.pop("cuda_graph")
    if s.get("disable_cuda_graph") is None and isinstance(graphs, bool):
        s["disable_cuda_graph"] = not graphs
    return s
