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


class Why(StrEnum):
    """Why a configuration's effect on a helper is inconclusive (its figures: `lower`)."""

    TOO_FEW = "n too small"  # fewer common samples than paired.MIN_COMMON
    NOISE = "inside the noise"  # the signed-rank test over the per-sample means
    NOISE_GATE = "inside the noise at the gate"  # the sign test below the 1e-9 floor


class Missing(StrEnum):
    """Why a configuration has no result."""

    NOT_RUN = "the configuration did not run"
    BASE_NOT_RUN = "the base did not run"  # the base's own entry
    NOT_READ = "not read: the base did not run"  # every other configuration's then
    REFUSED = "refused"  # `kltui check` would refuse the pair (readings/identity.conflict)


class Trap(StrEnum):
    """A configuration that is never counted as a fix."""

    NOT_TAKEN = "the flag did not take effect"  # /server_info reports the base's value
    # bit-identical to the base on every helper while /server_info cannot tell
    CHANGED_NOTHING = "changed nothing"


class Shape(StrEnum):
    """What a helper's verdict rests on (which configurations, in which role)."""

    REMOVED = "removed"  # single knobs that remove it (`found`)
    TOGETHER = "together"  # no single knob; combinations that remove it
    ON_SAMPLES = "on samples"  # single knobs that remove it on named samples
    ON_SAMPLES_TOGETHER = "on samples together"
    REDUCED = "reduced"
    UNSURE = "unsure"  # too few base samples, or configurations inside the noise (`found`)
    BLIND = "blind"  # every configuration that counts left its path untested
    ALONE = "alone"  # no configuration besides the base counts
    NO_SINGLE = "no single knob"


class Step(StrEnum):
    """The sweep's next step."""

    CHAIN = "find the module"  # localized condition 1: the dumper drill-down
    MORE_SAMPLES = "more samples"  # too few samples for the paired test
    LONGER = "more samples or longer generations"
    VARY_OTHER = "vary other knobs"  # after --pairs
    PAIRS = "re-run with --pairs"
    TEST_PATHS = "make the base's helpers test their paths"
    BLIND = "vary knobs that keep the path"  # `helpers` and the knobs that turned it off
    ALONE = "measure another configuration"
    INTRODUCED = "keep the base's setting"  # `configs` break the base's bit-exactness
