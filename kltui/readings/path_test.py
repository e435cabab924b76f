"""Is a cache path worse than match? The one decision that the diagnosis and the calibration
bench both run (`judge`), on what each helper measured: per-sample mean k3, the tokens that
differ and the tokens compared, the level and the gate.

With match exact, "noise shared by every path happened to miss match" is the null: the chance
that all k differing samples fall on the cache path's samples and none on match's or on another
exact path's (`one_path_p`) must be below EVIDENCE_P. Samples, not tokens: one noise event
makes every later token of its sample differ. With match noisy, the paired tests over samples decide (`paired`):
a shift beyond a tolerated drift, a minority of samples far above their typical ratio, or a
spread of the path's samples wider than match's beyond what a tolerated drift gives.
What reaches neither is kernel noise, or, where samples far above match outnumber those far
below (or the helper fails its gate while some are), a suspicion that names its samples and is
never a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from kltui.readings.paired import EVIDENCE_P, STRAY_ULP_FLOOR, Paired, one_path_p, paired


class PathKind(StrEnum):
    """What a cache path's comparison with match came to."""

    STATE = "state"  # condition 2 on its path
    SUSPECT = "suspect"  # far above match on a few samples: not enough to tell from chance
    FEW = "few"  # too few common samples for the paired test
    NOISE = "noise"  # no more than kernel noise (what was tested says so)
    STRAY = "stray"  # differs, at or below the stray-ulp floor
    UNCLEAR = "unclear"  # match exact, the path's differences could still be shared noise
    EXACT = "exact"  # no differing token


STATE, SUSPECT, FEW, NOISE = PathKind.STATE, PathKind.SUSPECT, PathKind.FEW, PathKind.NOISE
STRAY, UNCLEAR, EXACT = PathKind.STRAY, PathKind.UNCLEAR, PathKind.EXACT


@dataclass(frozen=True)
class PathSide:
    """What one helper measured, as the decision reads it."""

    means: np.ndarray  # per-sample mean k3 by common sample (NaN where not scored)
    differing: int  # tokens whose logprobs differ (non-finite pairs left out)
    tokens: int  # tokens compared
    level: float  # avg_kl_div
    passed: bool  # within its gate
    differing_samples: int  # samples with a differing token
    samples: int  # samples compared


@dataclass(frozen=True)
class PathVerdict:
    """One cache path against match."""

    helper: str
    kind: PathKind
    paired: Paired | None = None
    p: float | None = None  # match exact: one_path_p over samples

    @property
    def state(self) -> bool:
        """Condition 2 on this path."""
        return self.kind == STATE


def judge(helper: str, side: PathSide, match: PathSide, exact_others: int = 0) -> PathVerdict:
    """The verdict on one cache path against match (see the module's docstring);
    `exact_others`: the samples that the other exact cache paths compared (match exact: the
    shared noise could have fallen on them too)."""
    if side.differing == 0:
        return PathVerdict(helper, EXACT)
    if match.differing == 0:
        if side.level <= STRAY_ULP_FLOOR:
            return PathVerdict(helper, STRAY)
        p = one_path_p(side.differing_samples, side.samples, match.samples + exact_others)
        return PathVerdict(helper, STATE if p < EVIDENCE_P else UNCLEAR, p=p)
    e = paired(helper, side.means, match.means, side.level)
    if e.significant:
        return PathVerdict(helper, STATE, e)
    if side.level <= STRAY_ULP_FLOOR:
        return PathVerdict(helper, NOISE, e)
    if e.too_few:
        return PathVerdict(helper, FEW, e)
    if e.suspect or (not side.passed and e.up > e.down):
        return PathVerdict(helper, SUSPECT, e)
    return PathVerdict(helper, NOISE, e)
