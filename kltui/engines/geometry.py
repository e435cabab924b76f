"""StateGeometry: the cache state a server's model keeps, typed, each figure with its source.

A dense model's radix cache restores KV token by token; a Mamba / linear-attention model's
restores a recurrent state only at checkpoints (prefill chunk boundaries and, while decoding,
every `track_interval` tokens); a sliding-window model keeps only the last `size` tokens' KV on
its window layers; a MoE model routes each token to `top_k` of `n_experts` experts. Hits,
coverage and evidence are read against this geometry (docs/DIAGNOSIS.md).

This module is the type and its recorded form only (a seam between the engines that build it
and the readings that read it); building it from `/server_info` and the model's config.json is
the engines' job. A recorded geometry is untrusted: a value of the wrong type reads as unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kltui.engines.identity import ServerIdentity, as_float, as_int


class Source(StrEnum):
    """Where a figure of the geometry came from."""

    SERVER_INFO = "server_info"  # the server's /server_info (or /get_server_info)
    MODEL_INFO = "model_info"  # the server's /model_info
    MODEL_CONFIG = "config.json"  # the model's config.json, read from the model path
    FLAG = "--model-config"  # a config.json the user named
    DEFAULT = "sglang-default"  # SGLang's default for a setting the server did not report
    DERIVED = "derived"  # computed from other figures as SGLang computes it


class MambaStrategy(StrEnum):
    """SGLang's `--mamba-radix-cache-strategy`."""

    EXTRA_BUFFER = "extra_buffer"
    EXTRA_BUFFER_LAZY = "extra_buffer_lazy"
    NO_BUFFER = "no_buffer"


class StateKind(StrEnum):
    """What the cache restores, from the geometry's parts (a model may have several)."""

    DENSE = "dense"
    MAMBA = "mamba"
    SLIDING_WINDOW = "sliding_window"
    HYBRID = "mamba+sliding_window"


@dataclass(frozen=True)
class Sourced:
    """One integer figure and where it came from."""

    value: int
    source: Source

    def record(self) -> dict[str, Any]:
        """The recorded form: {"value", "source"}."""
        return {"value": self.value, "source": str(self.source)}

    @classmethod
    def of(cls, d: object) -> Sourced | None:
        """Read a recorded figure (untrusted: None unless both value and source read)."""
        if not isinstance(d, dict):
            return None
        value, source = as_int(d.get("value")), _source(d.get("source"))
        if value is None or source is None:
            return None
        return cls(value, source)


@dataclass(frozen=True)
class MambaState:
    """A Mamba / linear-attention model's checkpoints: prefill saves the state at multiples of
    `chunk_size` (SGLang: max(the model's mamba chunk size, page size)), decode every
    `track_interval` tokens (a multiple of the page size; SGLang's default 256)."""

    strategy: MambaStrategy | None
    strategy_source: Source | None
    track_interval: Sourced | None
    chunk_size: Sourced | None
    # the model's own mamba chunk (config.json's mamba_chunk_size, or SGLang's default for the
    # architecture), before SGLang takes the larger of it and the page size
    model_chunk_size: Sourced | None = None


@dataclass(frozen=True)
class SlidingWindow:
    """Sliding-window attention: `size` tokens on the layers `layers` of `n_layers`."""

    size: Sourced
    layers: tuple[int, ...]
    n_layers: int | None
    # /server_info's swa_full_tokens_ratio: the window layers' KV pool against the full layers'
    full_tokens_ratio: float | None = None


@dataclass(frozen=True)
class Experts:
    """A mixture of experts: each token goes to `top_k` of `n_experts`."""

    n_experts: int
    top_k: int | None
    source: Source


@dataclass(frozen=True)
class StateGeometry:
    """One server's model state geometry. `page_size` is the server's; the parts are None when
    the model has no such state or when nothing said so (`known` tells which)."""

    page_size: Sourced | None = None
    mamba: MambaState | None = None
    window: SlidingWindow | None = None
    experts: Experts | None = None
    config_path: str | None = None  # the config.json read, if any (untrusted text)
    known: bool = False  # False: no /server_info key and no config.json said anything

    def track_grid(self) -> int | None:
        """Where decode saves a Mamba checkpoint: SGLang 0.5.23's `mamba_track_grid`,
        lcm(chunk size, page size, track interval) (the interval itself on a default server;
        coarser where the interval is finer than the chunk). None without a Mamba state."""
        m = self.mamba
        if m is None or m.track_interval is None or m.track_interval.value <= 0:
            return None
        grid = m.track_interval.value
        for part in (m.chunk_size, self.page_size):
            if part is not None and part.value > 0:
                grid = math.lcm(grid, part.value)
        return grid

    @property
    def kind(self) -> StateKind:
        """What the cache restores, from the parts this geometry has."""
        if self.mamba and self.window:
            return StateKind.HYBRID
        if self.mamba:
            return StateKind.MAMBA
        if self.window:
            return StateKind.SLIDING_WINDOW
        return StateKind.DENSE

    def record(self) -> dict[str, Any]:
        """The recorded form (RunStarted.servers[i]["geometry"], the JSON report)."""
        out: dict[str, Any] = {"kind": str(self.kind), "known": self.known}
        out["page_size"] = self.page_size.record() if self.page_size else None
        out["config_path"] = self.config_path
        m = self.mamba
        out["mamba"] = (
            None
            if m is None
            else {
                "strategy": None if m.strategy is None else str(m.strategy),
                "strategy_source": None if m.strategy_source is None else str(m.strategy_source),
                "track_interval": m.track_interval.record() if m.track_interval else None,
                "chunk_size": m.chunk_size.record() if m.chunk_size else None,
                "model_chunk_size": m.model_chunk_size.record() if m.model_chunk_size else None,
            }
        )
        w = self.window
        out["sliding_window"] = (
            None
            if w is None
            else {
                "size": w.size.record(),
                "layers": list(w.layers),
                "n_layers": w.n_layers,
                "full_tokens_ratio": w.full_tokens_ratio,
            }
        )
        e = self.experts
        out["experts"] = (
            None
            if e is None
            else {"n_experts": e.n_experts, "top_k": e.top_k, "source": str(e.source)}
        )
        return out

    @classmethod
    def of(cls, d: object) -> StateGeometry:
        """Read a recorded geometry (untrusted: what does not read is unknown)."""
        if not isinstance(d, dict):
            return cls()
        return cls(
            page_size=Sourced.of(d.get("page_size")),
            mamba=_mamba_of(d.get("mamba")),
            window=_window_of(d.get("sliding_window")),
            experts=_experts_of(d.get("experts")),
            config_path=d.get("config_path") if isinstance(d.get("config_path"), str) else None,
            known=d.get("known") is True,
        )


def _source(v: object) -> Source | None:
    return Source(v) if isinstance(v, str) and v in Source.__members__.values() else None


def _mamba_of(d: object) -> MambaState | None:
    if not isinstance(d, dict):
        return None
    strategy = d.get("strategy")
    return MambaState(
        strategy=next((m for m in MambaStrategy if m.value == strategy), None),
        strategy_source=_source(d.get("strategy_source")),
        track_interval=Sourced.of(d.get("track_interval")),
        chunk_size=Sourced.of(d.get("chunk_size")),
        model_chunk_size=Sourced.of(d.get("model_chunk_size")),
    )


def _window_of(d: object) -> SlidingWindow | None:
    if not isinstance(d, dict):
        return None
    size = Sourced.of(d.get("size"))
    layers = d.get("layers")
    if size is None:
        return None
    good = tuple(x for x in layers if as_int(x) is not None) if isinstance(layers, list) else ()
    return SlidingWindow(
        size=size,
        layers=good,
        n_layers=as_int(d.get("n_layers")),
        full_tokens_ratio=as_float(d.get("full_tokens_ratio")),
    )


def _experts_of(d: object) -> Experts | None:
    if not isinstance(d, dict):
        return None
    n, source = as_int(d.get("n_experts")), _source(d.get("source"))
    if n is None or source is None:
        return None
    return Experts(n_experts=n, top_k=as_int(d.get("top_k")), source=source)


def geometry_of(identity: ServerIdentity) -> StateGeometry:
    """A recorded server's geometry (unknown for an older recording or another engine)."""
    return StateGeometry.of(identity.get("geometry"))
