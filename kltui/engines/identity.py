"""ServerIdentity: what one server said about itself, typed.

The engines build it (`SGLangClient.identify`, `VLLMClient.identify`); `RunStarted.servers`
records `record()` of each; every reader of a recording reads it back with `ServerIdentity.of`.
The values came from a server: views escape them for their medium.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


# Readers of untrusted recorded values: a value of the wrong type reads as unknown (None).
def as_int(v: object) -> int | None:
    """`v` when it is an integer (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def as_float(v: object) -> float | None:
    """`v` as a float when it is a number (not a bool), else None."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def as_bool(v: object) -> bool | None:
    """`v`'s truth, None when it is None."""
    return None if v is None else bool(v)


def as_str(v: object) -> str | None:
    """`v` as text, None when it is None."""
    return None if v is None else str(v)


@dataclass(frozen=True)
class ServerIdentity:
    """One server as it described itself (an entry of RunStarted.servers), typed: the settings
    the diagnosis and the advice reason about as fields, every reported key through `get`."""

    url: str | None = None
    engine: str = "sglang"
    error: str | None = None  # the server could not be identified (unreachable, refused)
    version: str | None = None
    model_path: str | None = None
    tp_size: int | None = None
    page_size: int | None = None
    chunked_prefill_size: int | None = None
    attention_backend: str | None = None
    enable_deterministic_inference: bool | None = None  # None: the server did not say
    disable_radix_cache: bool | None = None
    disable_cuda_graph: bool | None = None
    skip_tokenizer_init: bool = False
    reported: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, d: object) -> ServerIdentity:
        """Read a recorded identity (untrusted: a value of the wrong type reads as unknown)."""
        d = d if isinstance(d, dict) else {}
        return cls(
            url=as_str(d.get("url")),
            engine=str(d.get("engine") or "sglang"),
            error=as_str(d.get("error")),
            version=as_str(d.get("version")),
            model_path=as_str(d.get("model_path")),
            tp_size=as_int(d.get("tp_size")),
            page_size=as_int(d.get("page_size")),
            chunked_prefill_size=as_int(d.get("chunked_prefill_size")),
            attention_backend=as_str(d.get("attention_backend")),
            enable_deterministic_inference=as_bool(d.get("enable_deterministic_inference")),
            disable_radix_cache=as_bool(d.get("disable_radix_cache")),
            disable_cuda_graph=as_bool(d.get("disable_cuda_graph")),
            skip_tokenizer_init=bool(d.get("skip_tokenizer_init")),
            reported=MappingProxyType(dict(d)),
        )

    def get(self, key: str, default: Any = None) -> Any:
        """A reported value by its identity key (a Setting's `key`), `default` when the
        server did not report the key at all."""
        return self.reported.get(key, default)

    def record(self) -> dict[str, Any]:
        """The identity as RunStarted.servers records it (every reported key, as reported)."""
        return dict(self.reported)

    @classmethod
    def unreachable(cls, url: str, engine: str, message: str, kind: str) -> ServerIdentity:
        """The identity of a server that could not be identified: its URL and why."""
        return cls.of({"url": url, "engine": engine, "error": message, "error_kind": kind})

    def __bool__(self) -> bool:
        """False for an identity nothing was recorded for (a recording without RunStarted)."""
        return bool(self.reported)


def identity_of(servers: list[dict[str, Any]], url: str) -> ServerIdentity:
    """The identity of `url` among a run's recorded servers (empty when it was not recorded)."""
    for s in servers:
        if isinstance(s, dict) and s.get("url") == url:
            return ServerIdentity.of(s)
    return ServerIdentity()
