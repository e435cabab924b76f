"""The evidence records a server's state geometry adds to its diagnosis (issue 57): divergent
against passing samples by their remainders against the Mamba chunk and track interval, what
each hit restored, where divergence starts against the window handoff and the checkpoint
boundaries, how many samples crossed those boundaries at all, a divergence confined to the
samples that decoded past the window, and what a MoE model's routing does to the tail. Figures
only; the words are `kltui/words/geometry_evidence.py`. A dense geometry adds none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from kltui.readings.diagnosis_parts import EvidenceKind, Line


class Modulus(StrEnum):
    """The geometry figure a prompt length is taken modulo."""

    CHUNK = "chunk"  # the Mamba prefill checkpoint chunk (max(model chunk, page))
    TRACK = "track interval"  # the Mamba decode checkpoint interval


@dataclass(frozen=True)
class Residues(Line):
    """prompt_len % `step` of the divergent and the passing samples."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.RESIDUES
    helper: str
    modulus: Modulus
    step: int
    divergent: tuple[int, ...]
    passing: tuple[int, ...]


class RestoreKind(StrEnum):
    """Which checkpoint a hit restored, from its cached_tokens."""

    NOTHING = "nothing"  # cached_tokens 0
    PREFILL_CHUNK = "prefill chunk"  # within the prompt, a multiple of the chunk
    DECODE_TRACK = "decode checkpoint"  # past turn 1's prompt, a multiple of the track interval
    OFF_GRID = "off the grid"  # neither: not a checkpoint of this geometry


@dataclass(frozen=True)
class Restored(Line):
    """What the hits of the divergent and of the passing samples restored: (kind, samples)."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.RESTORED
    helper: str
    chunk: int | None
    track: int | None
    divergent: tuple[tuple[RestoreKind, int], ...]
    passing: tuple[tuple[RestoreKind, int], ...]


class Boundary(StrEnum):
    """Where a divergent sample first differs, against the geometry."""

    FIRST = "the first generated token"  # the state decoding started from (the restore)
    WINDOW = "the first token past the window"  # the window handoff (eviction)
    TRACK = "the first token past a track-interval boundary"  # a checkpoint rotation
    ELSEWHERE = "elsewhere"


@dataclass(frozen=True)
class Handoff(Line):
    """The divergent samples by where they first differ: (boundary, samples), largest first."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.HANDOFF
    helper: str
    n: int
    counts: tuple[tuple[Boundary, int], ...]
    window: int | None
    track: int | None


class Crossed(StrEnum):
    """A boundary of the geometry that decoding can cross."""

    TRACK = "track interval"  # a decode checkpoint is saved (and turn 2 restores it)
    WINDOW = "sliding window"  # the window's eviction starts


@dataclass(frozen=True)
class Crossing(Line):
    """How many of a helper's samples crossed a boundary while decoding; `need` is the
    --max-new-tokens that would make every sample cross it (None when every one did)."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.CROSSING
    helper: str
    boundary: Crossed
    step: int
    crossed: int
    n: int
    need: int | None


@dataclass(frozen=True)
class WindowSplit(Line):
    """match differs exactly in (or within) the samples whose decode passed the window, and is
    bit-identical in every sample that stayed within it."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.WINDOW_SPLIT
    helper: str
    window: int
    passed: tuple[int, ...]  # samples whose decode passed the window
    differing: tuple[int, ...]  # the samples that differ (all among `passed`)
    within: int  # the other samples, every one bit-identical
    p: float  # the larger of the two below: the split's p
    p_samples: float = 1.0  # the chance that shared noise put every difference on `passed`
    # the chance that noise whose start is not tied to the window (uniform over the generated
    # positions, or earlier) began every differing sample at or after its handoff
    p_position: float = 1.0


@dataclass(frozen=True)
class TopFlips:
    """Top-1 flips where the drill-down fetched top-k (its windows around each worst sample's
    first divergence and largest k3): positions where the prefill's own top-1 is not the token
    the decode chose at temperature 0. `tail_*`: the positions whose k3 is above the tail
    threshold, and the flips among them."""

    samples: int
    positions: int
    flips: int
    tail_positions: int
    tail_flips: int


@dataclass(frozen=True)
class Routing(Line):
    """A MoE model: the helper with the largest single-token k3, against its mean, and the top-1
    flips measured in its drill-down windows (None: none fetched, or sampling at temperature > 0,
    where the decoded token is not the decode's top-1)."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.ROUTING
    experts: int
    top_k: int | None
    helper: str
    max_k3: float
    level: float
    n_tail: int
    flips: TopFlips | None = None
