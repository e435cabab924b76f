"""The typed findings of a server's diagnosis: what was decided (`Finding`), what it rests on
(`Basis`: the helpers tested with their sample counts, each cache path's verdict with its
p-value and affected samples, the helpers not tested and why). The words are rendered apart
(`kltui/words/diagnosis.py`); tests and front ends read these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kltui.readings.coverage import Untested
    from kltui.readings.geometry_parts import Crossing


class Finding(StrEnum):
    """What the diagnosis of one server came to (docs/DIAGNOSIS.md)."""

    IMPORTED = "imported"  # a file's reading (kltui import): never a condition
    PENDING = "pending"  # no helper finished yet
    NOTHING_TESTED = "nothing tested"  # every helper errored, was vacuous or scored too few
    SAMPLING = "sampling"  # temperature > 0: k3 measures draws, not kernels
    EXACT = "exact"  # bit-identical in every helper: conditions 1 and 2 hold
    EXACT_WHERE_TESTED = "exact where tested"  # bit-identical, but a path was not tested
    BASELINE_NOT_TESTED = "baseline not tested"  # a cache path diverges, match not tested
    STATE_BUG = "state bug"  # match exact, a cache path beyond chance: condition 2
    STATE_UNCLEAR = "state unclear"  # match exact, a cache path differs in too few samples
    STRAY_ULPS = "stray ulps"  # match exact, a cache path at rounding level only
    STATE_BUG_FIRST = "state bug first"  # orders of magnitude above a match within its gate
    BOTH = "conditions 1 and 2"  # kernel noise and a state bug beyond it
    BROAD_EXCESS = "broad excess"  # above match in most samples, short of the drift bar
    FEW_FAR_ABOVE = "few far above"  # far above match on a few samples: too few to tell
    TOO_FEW_COMMON = "too few common samples"  # the paired test cannot run
    MATCH_PATH_ONLY = "condition 1 on match's path only"  # the cache paths are exact
    CACHE_NOT_TESTED = "condition 1, condition 2 not tested"
    DETERMINISTIC_SHAPE = "condition 1 with deterministic inference"
    BATCH_VARIANCE = "condition 1 (batch variance)"
    # match at rounding level on every sample, a cache path orders of magnitude above it on
    # some of the same prompts: direct evidence of a state bug on those samples
    DIRECT_STATE = "state bug on named samples"
    # samples of a cache path orders of magnitude above match, none the other way, short of
    # evidence: never read as kernel noise
    FAR_ABOVE = "far above match on named samples"
    # no state bug found, and none of any size would have been found reliably at this spread
    NOT_EXCLUDED = "state bug not excluded"
    # match differs only in the samples whose decode reused cached tokens, its cold samples
    # bit-identical: a state bug on the restore path, whichever helper shows it
    RESTORE_STATE = "state bug on the reused cache"
    RESTORE_UNCLEAR = "differs on the reused cache, too few to tell"
    # match differs only in the samples whose decode passed the model's sliding window, the
    # samples within it bit-identical: a state bug on the window, whichever helper shows it
    WINDOW_STATE = "state bug past the window"
    WINDOW_UNCLEAR = "differs past the window, too few to tell"


class Kind(StrEnum):
    """The conditions a diagnosis shows broken, as a key for styles and labels."""

    EXACT = "exact"
    ONE = "1"
    TWO = "2"
    BOTH = "1+2"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class PathBasis:
    """One helper the verdict rests on: its samples, and for a cache path its test against
    match (the path test's kind, the p-value it decided on, the samples far above match)."""

    helper: str
    scored: int
    samples: int
    verdict: str | None = None  # path_test's kind (None: match, or a path not compared)
    p: float | None = None
    affected: tuple[int, ...] = ()  # sample ids far above match on the same prompt

    def to_json(self) -> dict[str, Any]:
        """The entry of the JSON diagnosis's `rests_on.tested`."""
        return {
            "helper": self.helper,
            "scored": self.scored,
            "samples": self.samples,
            "verdict": self.verdict,
            "p": self.p,
            "affected": list(self.affected),
        }


@dataclass(frozen=True)
class Basis:
    """What a diagnosis rests on: the helpers that tested their path, and those that did not
    (helper -> why)."""

    tested: tuple[PathBasis, ...] = ()
    untested: Mapping[str, Untested] = field(default_factory=dict)
    # the state geometry's boundaries that no sample of a helper crossed while decoding
    # (readings/geometry_parts.Crossing): the verdict says so (not in the JSON's rests_on:
    # the evidence carries them)
    uncrossed: tuple[Crossing, ...] = ()

    def path(self, helper: str) -> PathBasis | None:
        """One helper's entry (None: it did not test its path)."""
        return next((t for t in self.tested if t.helper == helper), None)
