"""The kinds of an ablation's reading, as data: what a configuration did to one helper
(`Effect`) and what the whole sweep came to (`VerdictKind`), strongest first."""

from __future__ import annotations

from enum import StrEnum

REDUCED_BY = 10.0  # "reduced": at least this many times lower than the base


class Effect(StrEnum):
    """What a configuration did to one helper against the base."""

    BASE = "base"
    REMOVED = "removed"  # at the floor, beyond chance
    # at rounding level on every sample, where the base sits orders of magnitude above it on
    # some (named) and nowhere below: removed on those samples, whatever a test over all says
    REMOVED_ON = "removed on samples"
    REDUCED = "reduced"  # >= 10x lower, beyond chance
    LOWER = "lower"  # lower beyond chance, less than 10x
    NONE = "none"  # not lower beyond chance
    WORSE = "worse"  # higher beyond chance
    SAME = "same"  # bit-identical to the base on every common sample
    INCONCLUSIVE = "inconclusive"
    NOT_TESTED = "not tested"  # the configuration's helper tested nothing
    NOTHING = "nothing to remove"  # the base is at the floor on this helper
    # the base at the floor, this configuration above it: beyond chance, or orders of magnitude
    # above rounding on named samples with none the other way (it breaks bit-exactness)
    INTRODUCED = "introduced"
    BASE_NOT_TESTED = "base not tested"


class VerdictKind(StrEnum):
    """The ablation's verdict, strongest first."""

    NOT_REPRODUCED = "not reproduced"
    LOCALIZED = "localized"
    REDUCED = "reduced"
    NO_SINGLE = "no single knob"
    INCONCLUSIVE = "inconclusive"
    # the base passes at the floor and a knob brings a divergence it does not have
    INTRODUCED = "introduced"


BASE_EFFECT, REMOVED, REDUCED, LOWER = Effect.BASE, Effect.REMOVED, Effect.REDUCED, Effect.LOWER
REMOVED_ON = Effect.REMOVED_ON
NONE, WORSE, SAME, INCONCLUSIVE = Effect.NONE, Effect.WORSE, Effect.SAME, Effect.INCONCLUSIVE
NOT_TESTED, NOTHING, BASE_NOT_TESTED = Effect.NOT_TESTED, Effect.NOTHING, Effect.BASE_NOT_TESTED
INTRODUCED = Effect.INTRODUCED
INTRODUCED_KIND = VerdictKind.INTRODUCED
NOT_REPRODUCED, LOCALIZED = VerdictKind.NOT_REPRODUCED, VerdictKind.LOCALIZED
REDUCED_KIND, NO_SINGLE = VerdictKind.REDUCED, VerdictKind.NO_SINGLE
INCONCLUSIVE_KIND = VerdictKind.INCONCLUSIVE
_STRENGTH = {LOCALIZED: 4, REDUCED_KIND: 3, NO_SINGLE: 2, INCONCLUSIVE_KIND: 1}
