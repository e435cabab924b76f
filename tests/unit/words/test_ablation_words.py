"""The ablation's words, one golden line per kind (readings/ablation*.py decide, words say):
each helper verdict's shape, each next step, each trap, why a configuration has no result,
why an effect is inconclusive, and each cell label."""

from __future__ import annotations

from kltui.ablate.plan import Config
from kltui.readings.ablation import HelperVerdict, Verdict
from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_kinds import Effect, Missing, Shape, Step, Trap, VerdictKind, Why
from kltui.readings.ablation_settings import SettingCheck
from kltui.readings.paired import Paired
from kltui.words.ablation import helper_verdict_line, next_step
from kltui.words.ablation_config import cell, config_line, missing_text, trap_line, why_text

BASE = HelperReading("match", "base", 8.5e-3, None, 32, 0, 0, 0, None, Effect.BASE)


def reading(effect: Effect, level: float | None = 0.0, **kw) -> HelperReading:
    return HelperReading("match", "fa3", level, 8.5e-3, 32, 32, 32, 0, None, effect, **kw)


LOWER = Paired("match", 32, 30, 2, 0, 8.5e6, 2.3e-10, 0.0)
FOUND = (("attention-backend=fa3", reading(Effect.REMOVED)),)


def verdict(kind: VerdictKind, shape: Shape, **kw) -> str:
    return helper_verdict_line(HelperVerdict("match", kind, shape, BASE, **kw))


def test_each_shape_in_words():
    assert verdict(VerdictKind.LOCALIZED, Shape.REMOVED, found=FOUND) == (
        "localized: attention-backend=fa3 removes match's divergence (8.5e-3 -> 0, 32/32 "
        "samples bit-identical)"
    )
    assert verdict(VerdictKind.LOCALIZED, Shape.TOGETHER, found=FOUND) == (
        "localized: no single knob explains match's divergence; together attention-backend=fa3 "
        "(8.5e-3 -> 0, 32/32 samples bit-identical) removes it"
    )
    on = (("a=1", reading(Effect.REMOVED_ON, samples=(3, 17))),)
    assert verdict(VerdictKind.LOCALIZED, Shape.ON_SAMPLES, found=on, samples=(3, 17)) == (
        "localized on 2 samples (#3 and #17): a=1 (8.5e-3 -> 0, at rounding level on every "
        "sample) removes match's divergence there, where the base sits orders of magnitude "
        "above rounding"
    )
    red = (("a=1", reading(Effect.REDUCED, 8.5e-5, lower=LOWER)),)
    assert verdict(VerdictKind.REDUCED, Shape.REDUCED, found=red) == (
        "reduced: a=1 (8.5e-3 -> 8.5e-5, x100 lower, p=2.3e-10) lowers match's divergence at "
        "least 10x beyond chance, not to the floor"
    )
    unsure = (("a=1", reading(Effect.INCONCLUSIVE, 1e-3, lower=LOWER, why=Why.NOISE)),)
    assert verdict(VerdictKind.INCONCLUSIVE, Shape.UNSURE, found=unsure) == (
        "inconclusive for match's divergence (8.5e-3): a=1: 8.5e-3 -> 1e-3, inside the noise: "
        "lower on 30 of 32 samples, signed-rank p=2.3e-10"
    )
    assert verdict(VerdictKind.INCONCLUSIVE, Shape.BLIND, untested_by=("radix-cache=off",)) == (
        "inconclusive for match's divergence (8.5e-3): no configuration that took effect "
        "tested its path (not tested by radix-cache=off)"
    )
    assert verdict(VerdictKind.INCONCLUSIVE, Shape.ALONE, missing=("a=1",)) == (
        "inconclusive for match's divergence (8.5e-3): no configuration besides the base "
        "counts (not measured: a=1)"
    )
    assert verdict(VerdictKind.NO_SINGLE, Shape.NO_SINGLE, tried=("a=1", "b=2")) == (
        "no single knob explains match's divergence (8.5e-3): none of a=1, b=2 removes or "
        "reduces it beyond chance"
    )


def test_each_step_in_words():
    said = {s: next_step(Verdict(VerdictKind.INCONCLUSIVE, step=s)) for s in Step}
    assert said[Step.MORE_SAMPLES] == "re-run with more samples (--samples 32)"
    assert said[Step.PAIRS] == "re-run with --pairs: the knobs that moved it most, two at a time"
    assert said[Step.TEST_PATHS] == "make the base's helpers test their paths"
    assert said[Step.CHAIN].startswith("find the module: relaunch the base with the dumper's")
    assert said[Step.LONGER].endswith("so the paired test can tell")
    assert (
        said[Step.VARY_OTHER] == "vary other knobs, or find the module on the base with kltui dumps"
    )
    assert said[Step.ALONE].startswith("measure at least one other configuration")
    blind = Verdict(VerdictKind.INCONCLUSIVE, (), Step.BLIND, ("match",), ("radix-cache=off",))
    assert next_step(blind) == (
        "vary knobs that leave match testing its path (radix-cache=off turned it off)"
    )
    intro = Verdict(VerdictKind.INTRODUCED, (), Step.INTRODUCED, (), ("cps=16",))
    assert next_step(intro) == (
        "cps=16 breaks the base's bit-exactness: keep the base's setting, or find the module "
        "on a server launched with it (kltui dumps)"
    )


def test_each_trap_and_missing_in_words():
    cfg = Config("attention-backend=fa3", {"attention-backend": "fa3"})
    same = HelperReading("match", cfg.name, 8.5e-3, 8.5e-3, 32, 0, 32, 32, None, Effect.SAME)
    bad = SettingCheck(
        "attention-backend", "attention_backend", "fa3", "triton", "triton", "triton"
    )
    taken = ConfigReading(cfg, (same,), settings=(bad,), identical_to_base=True)
    assert taken.trap == Trap.NOT_TAKEN and trap_line(taken) == (
        "attention-backend=fa3: the flag did not take effect: /server_info reports "
        "attention_backend=triton, the base's value (attention-backend=triton): check its guard"
    )
    quiet = ConfigReading(cfg, (same,), identical_to_base=True)
    assert quiet.trap == Trap.CHANGED_NOTHING and trap_line(quiet) == (
        "attention-backend=fa3: changed nothing: every helper bit-identical to the base "
        "(match 32/32 samples) and /server_info does not say whether it took effect: either "
        "the flag did not take effect (check its guard) or the divergence does not depend on it"
    )
    lines = {
        m: missing_text(ConfigReading(cfg, missing=m)) for m in Missing if m != Missing.REFUSED
    }
    assert lines == {
        Missing.NOT_RUN: "no result: the configuration did not run",
        Missing.BASE_NOT_RUN: "no result: the base did not run",
        Missing.NOT_READ: "not read: the base did not run",
    }
    assert config_line(ConfigReading(cfg, missing=Missing.NOT_RUN)) == (
        "attention-backend=fa3: not measured (no result: the configuration did not run)"
    )


def test_why_and_cells_in_words():
    few = Paired("match", 3, 3, 0, 0, 1.0, 0.12, 0.0)
    assert why_text(reading(Effect.INCONCLUSIVE, lower=few, why=Why.TOO_FEW)) == (
        "n too small: 3 common samples, 12 needed"
    )
    gate = reading(Effect.INCONCLUSIVE, lower=few, why=Why.NOISE_GATE)
    assert why_text(gate) == (
        "inside the noise: the base above the gate on 3 of 3 samples where this configuration "
        "is not, the other way on 0 (sign test p=0.13)"
    )
    assert cell(BASE) == "8.5e-3"
    assert cell(reading(Effect.SAME, 8.5e-3)) == "8.5e-3 (= base)"
    assert cell(reading(Effect.NOT_TESTED, None)) == "not tested"
    assert cell(reading(Effect.REMOVED)) == "0 (removed)"
