"""ServerIdentity: what one server said about itself, typed.

The engines build it (`SGLangClient.identify`, `VLLMClient.identify`); `RunStarted.servers`
records `record()` of each; every reader of a recording reads it back with `ServerIdentity.of`.
The values came from a server: views escape them for their medium.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from kltui.untrusted import one_line


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


class EngineName(StrEnum):
    """Which engine a server is (RunStarted.servers[i]["engine"])."""

    SGLANG = "sglang"
    VLLM = "vllm"
    HF = "hf"  # the HF judge's worker (--baseline hf:PATH)
    ROUTER = "sglang-router"

    @classmethod
    def of(cls, value: object) -> EngineName | None:
        """A recorded name: none at all is SGLang (recordings older than the key); a name this
        version does not know is None (`ServerIdentity.engine_label` shows it as recorded)."""
        if value is None or value == "":
            return cls.SGLANG
        try:
            return cls(value) if isinstance(value, str) else None
        except ValueError:
            return None


# SGLang's weight_version until someone sets one (--weight-version, update_weights)
PLACEHOLDER_VERSIONS = frozenset({"", "default"})


@dataclass(frozen=True)
class ServerIdentity:
    """One server as it described itself (an entry of RunStarted.servers), typed: the settings
    the diagnosis and the advice reason about as fields, every reported key through `get`."""

    url: str | None = None
    engine: EngineName | None = EngineName.SGLANG  # None: a name this version does not know
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
            engine=EngineName.of(d.get("engine")),
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

    @property
    def model_name(self) -> str:
        """The model as a label: the served model name when the server was given one, else the
        last component of its model path (a path names a machine's folder, not the model)."""
        path = (self.model_path or "").rstrip("/\\")
        served = self.get("served_model_name")
        if isinstance(served, str) and served.strip() and served.rstrip("/\\") != path:
            return served.strip()
        return path.replace("\\", "/").rsplit("/", 1)[-1]

    @property
    def engine_label(self) -> str:
        """The engine's name as shown: its kind, or the recorded name this version does not
        know (untrusted text: views escape it)."""
        return str(self.engine) if self.engine is not None else str(self.get("engine"))

    @property
    def weight_version(self) -> str | None:
        """The weight version the server reports, None for none or SGLang's placeholder (a
        label every server carries until someone sets one, so equal placeholders say nothing
        about the tensors)."""
        v = self.get("weight_version")
        return None if v is None or str(v) in PLACEHOLDER_VERSIONS else str(v)

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


# What one server process is: SGLang fixes these at launch, so a change between two reads of
# /server_info (two runs of --repeat) means another process answers on that URL. Unlike the
# engines' PROCESS_IDENTITY (a restart in the middle of a run), this also holds the settings
# that change the numbers: a relaunch with deterministic inference off is not noise.
RELAUNCH_KEYS = (
    "startup_time",
    "random_seed",
    "enable_deterministic_inference",
    "version",
    "model_path",
    "weights_sha256",
    "weight_version",
    "local_weights_sha256",
    "tp_size",
    "dp_size",
    "dtype",
    "attention_backend",
    "page_size",
    "chunked_prefill_size",
    "disable_radix_cache",
    "disable_cuda_graph",
    "sampling_backend",
    "speculative_algorithm",
    "kltui_fault",
)


def process_changes(before: ServerIdentity, after: ServerIdentity) -> dict[str, tuple[Any, Any]]:
    """{key: (before, after)} for each launch-time value that differs between two reads of one
    URL's identity: empty when the same process (as far as it says) answered both times. A key
    one of the reads lacks (an older recording) is no evidence of a change."""
    if before.error or after.error:
        return {}
    return {
        k: (before.get(k), after.get(k))
        for k in RELAUNCH_KEYS
        if k in before.reported and k in after.reported and before.get(k) != after.get(k)
    }


def shown_value(v: object, limit: int = 40) -> str:
    """A launch-time value in a one-line finding (server text: controls spelled out, cut)."""
    if isinstance(v, dict | list):  # SGLang 0.5.23's startup_time: per-stage seconds
        return "{…}" if isinstance(v, dict) else "[…]"
    if isinstance(v, bool):  # as the JSON and the settings table write it
        return "true" if v else "false"
    return one_line(v, limit)


def same_process(a: ServerIdentity, b: ServerIdentity) -> str | None:
    """Why two identities are one server process ("same startup_time 12.5 and port 30000 in
    /server_info"), None unless /server_info says so: the same reported startup_time and
    port, and no launch-time value differs. Without a startup_time nothing is claimed."""
    if a.error or b.error:
        return None
    t, port = a.get("startup_time"), a.get("port")
    if t is None or port is None or t != b.get("startup_time") or port != b.get("port"):
        return None
    if any(a.get(k) != b.get(k) for k in RELAUNCH_KEYS):
        return None
    return f"same startup_time {shown_value(t)} and port {shown_value(port)} in /server_info"
