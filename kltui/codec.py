"""Events <-> JSON-safe dicts. Non-finite floats survive the trip as "inf", "-inf", "nan"."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from kltui.events import EVENT_TYPES, Event

_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_INT_ARRAYS = {"token_ids"}
_FLOAT_ARRAYS = {"lp_a", "lp_b", "output_logprobs"}


def _floats_out(arr: np.ndarray) -> list:
    out = arr.astype(np.float64).tolist()
    bad = np.flatnonzero(~np.isfinite(arr))
    for i in bad:  # only the rare non-finite entries are touched
        v = out[i]
        out[i] = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return out


def _floats_in(values: list) -> np.ndarray:
    if any(isinstance(v, str) for v in values):
        values = [_NON_FINITE[v] if isinstance(v, str) else v for v in values]
    return np.asarray(values, dtype=np.float64)


def json_safe(value: Any) -> Any:
    """Plain floats that are not finite become strings; everything else passes through."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        return json_safe(value.item())
    return value


def encode(event: Event) -> dict:
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in dataclasses.fields(event):
        v = getattr(event, f.name)
        if f.name in _INT_ARRAYS:
            out[f.name] = np.asarray(v).tolist()
        elif f.name in _FLOAT_ARRAYS:
            out[f.name] = _floats_out(np.asarray(v))
        else:
            out[f.name] = json_safe(v)
    return out


def restore_float(value: Any) -> Any:
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if isinstance(value, dict):
        return {k: restore_float(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore_float(v) for v in value]
    return value


def decode(obj: dict) -> Event:
    """Inverse of encode(); raises KeyError/TypeError/ValueError on a malformed record."""
    cls = EVENT_TYPES[obj["type"]]
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in obj:
            continue
        v = obj[f.name]
        if f.name in _INT_ARRAYS:
            kwargs[f.name] = np.asarray(v, dtype=np.int64)
        elif f.name in _FLOAT_ARRAYS:
            kwargs[f.name] = _floats_in(v)
        else:
            kwargs[f.name] = restore_float(v)
    return cls(**kwargs)
