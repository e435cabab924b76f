"""A sweep whose gate sits below the 1e-9 stray-ulp floor (issue 59): `--threshold 0` asks for
bit-exactness, `--threshold 1e-15` for a level rounding alone reaches. Below that floor the
paired test of `readings/paired.py` sees nothing (it floors every sample at 1e-9, as the
diagnosis must), so a helper's divergence is read sample by sample against the gate: a sample
is above the floor when its logprobs differ at all (gate 0) or its mean k3 is above the gate.
A knob removes the divergence when it brings every sample to the floor and the base sits above
it on enough samples that chance cannot explain it (the exact sign test at the diagnosis's
EVIDENCE_P: 12 samples or more)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from kltui.readings.evidence import sample_mean
from kltui.readings.paired import EVIDENCE_P, STRAY_ULP_FLOOR, Paired, sign_p
from kltui.session.store import HelperState


class PairedTest(StrEnum):
    """Which test a configuration's per-sample comparison with the base rests on."""

    SIGNED_RANK = "signed-rank"  # per-sample means floored at 1e-9 (`paired.paired`)
    SIGN = "sign test"  # samples above the gate against samples at it (`below_rounding`)


def floor_of(base: HelperState | None) -> float:
    """The level a helper's divergence is read against: the 1e-9 stray-ulp floor, or the
    base's gate where the user asked for less (0: bit-exact)."""
    if base is None or not math.isfinite(base.threshold) or base.threshold < 0:
        return STRAY_ULP_FLOOR
    return min(STRAY_ULP_FLOOR, base.threshold)


def above(st: HelperState, ids: list[int], floor: float) -> np.ndarray:
    """Per sample of `ids`: whether it sits above the floor (floor 0: any logprob differs)."""
    out = np.zeros(len(ids), dtype=bool)
    for i, s in enumerate(ids):
        sample = st.book.samples[s]
        if floor == 0:
            a, b = np.asarray(sample.lp_a), np.asarray(sample.lp_b)
            out[i] = not np.array_equal(a, b, equal_nan=True)
        else:
            out[i] = sample_mean(sample) > floor
    return out


@dataclass(frozen=True)
class BelowRounding:
    """The base against one configuration, sample by sample, at a gate below 1e-9."""

    lower: Paired  # the base above the configuration: `higher` samples where only it is
    higher: Paired  # the configuration above the base

    @property
    def removed(self) -> bool:
        """The base above the floor where the configuration is not, beyond chance."""
        return self.lower.p < EVIDENCE_P

    @property
    def introduced(self) -> bool:
        """The configuration above the floor where the base is not, beyond chance."""
        return self.higher.p < EVIDENCE_P


def _counted(helper: str, up: int, down: int, n: int, level: float) -> Paired:
    return Paired(helper, n, up, down, n - up - down, math.nan, sign_p(up, down), level)


def below_rounding(
    st: HelperState, base: HelperState, level: float, base_level: float, floor: float
) -> BelowRounding:
    """Each common sample above the floor or not, in the base and in the configuration, with
    the exact sign test both ways."""
    common = [s for s in base.book.order if s in st.book.samples]
    b, c = above(base, common, floor), above(st, common, floor)
    up, down = int(np.count_nonzero(b & ~c)), int(np.count_nonzero(c & ~b))
    n = len(common)
    return BelowRounding(
        _counted(base.helper, up, down, n, base_level),
        _counted(st.helper, down, up, n, level),
    )
