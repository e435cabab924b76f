"""cross_engine's floors as a typed finding: each engine against itself, and the gap between the
engines read against them. The decision is `metrics/floors.read_floors` (kept in the helper's
summary as `floors.reading`); this reads it back, with the figures it rests on, from a summary's
`floors` entry (a recording's JSON). The words are `words/floors.py`'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kltui.metrics.floors import FloorKind, FloorReading

ENGINE_KEYS = ("sglang", "vllm")


def floors_of(figures: Any) -> dict | None:
    """The `floors` entry of a cross_engine summary's figures (None: not measured, or a
    recording from before floors)."""
    fl = figures.get("floors") if hasattr(figures, "get") else None
    return fl if isinstance(fl, dict) else None


def kind_of(floors: dict | None) -> FloorKind:
    """The reading's kind (UNMEASURED when there is none, or an unknown word)."""
    reading = (floors or {}).get("reading")
    word = reading.get("kind") if isinstance(reading, dict) else None
    known = {str(k): k for k in FloorKind}
    return known.get(str(word), FloorKind.UNMEASURED)


def _dict(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, dict) else {}


@dataclass(frozen=True)
class EngineFloor:
    """One engine against itself (its second scoring against its first), in cross_engine's
    figures; values as recorded (a recording may lack any of them)."""

    zero: bool  # no differing position: exactly 0
    positions: Any
    avg_k3: Any
    mean_abs_delta: Any
    max_abs_delta: Any
    top1_agreement: Any
    differing_positions: Any
    flips: int
    across_line: int  # flips whose margin is wider than `line`
    line: float  # the flip margin's line (nats)

    @classmethod
    def of(cls, f: Mapping[str, Any]) -> EngineFloor:
        """From the summary's `floors.<engine>` entry."""
        fm = _dict(f.get("flip_margins"))
        return cls(
            bool(f.get("zero")),
            f.get("positions"),
            f.get("avg_k3"),
            f.get("mean_abs_delta"),
            f.get("max_abs_delta"),
            f.get("top1_agreement"),
            f.get("differing_positions"),
            fm.get("flips") or 0,
            fm.get("across_line") or 0,
            fm.get("line", 0.7),
        )


@dataclass(frozen=True)
class Floors:
    """The floors' finding: the reading (its kind and the gap against the larger floor), which
    samples were scored again and how, and each engine's own floor (None: not measured)."""

    reading: FloorReading
    error: str | None  # the floors were not measured: why
    count: int  # samples scored again
    of: Any  # out of (as recorded)
    composition: str | None  # the second scoring's batch composition
    first_batch: int | None  # the first scoring's largest batch
    same_composition: bool  # the second scoring repeated the first's composition
    engines: dict[str, EngineFloor | None]  # ENGINE_KEYS -> its floor

    @property
    def kind(self) -> FloorKind:
        """The reading's kind."""
        return self.reading.kind


def read(floors: dict) -> Floors:
    """The finding of a summary's `floors` entry."""
    r = _dict(floors.get("reading"))
    first = floors.get("first_batch")
    comp = floors.get("composition")
    return Floors(
        FloorReading(
            kind_of(floors), r.get("gap"), r.get("larger"), r.get("larger_engine"), r.get("ratio")
        ),
        str(floors["error"]) if floors.get("error") else None,
        len(floors.get("samples") or []),
        floors.get("of", "?"),
        comp if isinstance(comp, str) and comp else None,
        first if isinstance(first, int) else None,
        bool(floors.get("same_composition")),
        {
            key: EngineFloor.of(f) if isinstance(f := floors.get(key), dict) else None
            for key in ENGINE_KEYS
        },
    )
