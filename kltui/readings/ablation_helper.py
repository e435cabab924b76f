"""One helper of one configuration of an ablation against the base's (`readings/ablation_config.py`
reads the configuration as a whole): its level, its per-sample tests against the base's and
what it came to (`HelperReading`, `effect_of`): removed, reduced, introduced on a bit-exact
base, not tested, and the rest of `Effect`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kltui.readings.ablation_exact import PairedTest, below_rounding, floor_of
from kltui.readings.ablation_kinds import (
    BASE_NOT_TESTED,
    INCONCLUSIVE,
    INTRODUCED,
    LOWER,
    NONE,
    NOT_TESTED,
    NOTHING,
    REDUCED,
    REDUCED_BY,
    REMOVED,
    REMOVED_ON,
    SAME,
    WORSE,
    Effect,
    Why,
)
from kltui.readings.ablation_settings import SettingCheck
from kltui.readings.compare import compare_books
from kltui.readings.coverage import NOT_RUN, NotTested, Untested, coverage_of, starved
from kltui.readings.evidence import excess_over_match, level_of, sample_mean
from kltui.readings.paired import MIN_COMMON, STRAY_ULP_FLOOR, Paired, far_samples
from kltui.session.store import HelperState


def removed_on(base: HelperState, st: HelperState) -> tuple[int, ...]:
    """The sample ids where the base sits orders of magnitude above this configuration, which
    stays at rounding level on every common sample, with none the other way: the knob removed
    the divergence on those samples (`paired.far_samples`, the diagnosis's direct evidence
    with this configuration in match's place). Empty when that is not what was measured."""
    return far_above(base, st)


def far_above(high: HelperState, low: HelperState) -> tuple[int, ...]:
    """The sample ids where `high` sits orders of magnitude above `low`, which stays at
    rounding level on every common sample, with none the other way (empty: not so)."""
    common = [s for s in high.book.order if s in low.book.samples]
    hi = np.array([sample_mean(high.book.samples[s]) for s in common], dtype=np.float64)
    lo = np.array([sample_mean(low.book.samples[s]) for s in common], dtype=np.float64)
    far = far_samples(hi, lo)
    return tuple(common[i] for i in far.up) if far.direct else ()


def _floored(x: float) -> float:
    return max(x, 0.0) + STRAY_ULP_FLOOR


def exact_samples_of(st: HelperState) -> int:
    """Samples whose prefill and decode logprobs are bit-identical in this configuration."""
    return sum(
        1
        for s in st.book.order
        if np.array_equal(
            np.asarray(st.book.samples[s].lp_a), np.asarray(st.book.samples[s].lp_b), equal_nan=True
        )
    )


@dataclass(frozen=True)
class HelperReading:
    """One helper of one configuration against the base's."""

    helper: str
    config: str
    level: float | None  # avg_kl_div (None: not tested)
    base_level: float | None
    scored: int
    exact_samples: int  # bit-identical prefill vs decode in this configuration
    common: int  # samples both this configuration and the base scored
    identical_to_base: int  # of those, bit-identical to the base's
    untested: Untested | None  # why this configuration's helper tested nothing
    effect: Effect
    why: Why | None = None  # for INCONCLUSIVE: n too small, or inside the noise (`lower`)
    lower: Paired | None = None  # base above this configuration, per sample
    higher: Paired | None = None  # this configuration above the base, per sample
    samples: tuple[int, ...] = ()  # REMOVED_ON: the sample ids it was removed on
    test: PairedTest = PairedTest.SIGNED_RANK  # what `lower` and `higher` rest on
    # the configuration's own knob that turned the radix cache off, leaving it untested
    blamed: SettingCheck | None = None
    # why it tested nothing, as a kind (None: it tested its path, or it did not run)
    not_tested: NotTested | None = None

    @property
    def change(self) -> float | None:
        """avg_kl_div over the base's (None when either is unknown or the base is 0)."""
        if self.level is None or not self.base_level:
            return None
        return self.level / self.base_level

    @property
    def movement(self) -> float | None:
        """How far this configuration lowered the helper: log10 of the base's level over its
        own, both floored at 1e-9 (negative: raised it). None when either did not test."""
        if self.level is None or self.base_level is None:
            return None
        return math.log10(_floored(self.base_level) / _floored(self.level))


def effect_of(
    name: str, helper: str, st: HelperState | None, base: HelperState | None
) -> HelperReading:
    """What one configuration's helper shows against the base's."""
    base_why = coverage_of(base) if base is not None else NOT_RUN
    base_level = level_of(base) if base is not None and base_why is None else None
    cov = coverage_of(st) if st is not None else None
    if cov is None and st is not None and base is not None and base_why is None:
        # hits far shorter than the base's test less than the base did: never a fix
        cov = starved(st, base)
    why = cov if st is not None else NOT_RUN
    level = level_of(st) if st is not None and why is None else None
    scored = len(st.book.order) if st is not None else 0
    exact = exact_samples_of(st) if st is not None else 0
    if st is not None and base is not None:
        diff = compare_books(base.book, st.book)
        common, same = diff.comparable, diff.identical_samples
    else:
        common = same = 0

    kind = None if cov is None else cov.kind

    def reading(effect: Effect, **kw: Any) -> HelperReading:
        return HelperReading(
            helper, name, level, base_level, scored, exact, common, same, why, effect, **kw,
            not_tested=kind,
        )  # fmt: skip

    if why is not None:
        return reading(NOT_TESTED)
    if base_level is None or level is None or st is None or base is None:
        return reading(BASE_NOT_TESTED)
    identical = bool(common) and same == common
    floor = floor_of(base)
    if floor < STRAY_ULP_FLOOR and (level <= floor or base_level <= floor):
        effect, kw = _below_rounding(st, base, level, base_level, floor, identical)
    else:
        effect, kw = _compared(st, base, level, base_level, identical)
    return reading(effect, **kw)


def _below_rounding(
    st: HelperState, base: HelperState, level: float, base_level: float, floor: float, same: bool
) -> tuple[Effect, dict[str, Any]]:
    """The effect against a gate below the 1e-9 floor (`readings/ablation_exact.py`), where
    either side is at the gate: removed, introduced, nothing to remove or inconclusive."""
    t = below_rounding(st, base, level, base_level, floor)
    kw: dict[str, Any] = {"lower": t.lower, "higher": t.higher, "test": PairedTest.SIGN}
    if same:
        return SAME, kw
    if base_level <= floor:
        return (INTRODUCED if level > floor and t.introduced else NOTHING), kw
    if t.removed:
        return REMOVED, kw
    p = t.lower
    if p.n < MIN_COMMON:
        return INCONCLUSIVE, kw | {"why": Why.TOO_FEW}
    return INCONCLUSIVE, kw | {"why": Why.NOISE_GATE}


def _compared(
    st: HelperState, base: HelperState, level: float, base_level: float, identical: bool
) -> tuple[Effect, dict[str, Any]]:
    """The effect of a configuration whose helper and the base's both tested their path, with
    what the reading keeps of it (the paired tests, a reason, the samples)."""
    lower = excess_over_match(base, st)  # base above this configuration
    higher = excess_over_match(st, base)
    kw: dict[str, Any] = {"lower": lower, "higher": higher}
    if identical:
        return SAME, kw
    if base_level <= STRAY_ULP_FLOOR:
        # the base is bit-exact (or at rounding level): a divergence here is this knob's
        if higher.significant:
            return INTRODUCED, kw
        if level > STRAY_ULP_FLOOR and (ids := far_above(st, base)):
            return INTRODUCED, kw | {"samples": ids}
        return NOTHING, kw
    if lower.too_few:
        return INCONCLUSIVE, kw | {"why": Why.TOO_FEW}
    at_floor = level <= STRAY_ULP_FLOOR
    tenfold = level * REDUCED_BY <= base_level
    if lower.beyond_chance:
        if at_floor:
            return REMOVED, kw
        return (REDUCED if tenfold else LOWER), kw
    if at_floor and (ids := removed_on(base, st)):
        # a knob that brings a few samples from far above rounding to it, and leaves the rest
        # where they were, is too few samples for a test over all of them: each is evidence
        return REMOVED_ON, kw | {"samples": ids}
    if at_floor or tenfold:
        return INCONCLUSIVE, kw | {"why": Why.NOISE}
    if higher.beyond_chance and level > base_level:
        return WORSE, kw
    return NONE, kw
