"""The ablation's words beyond each shape's (tests/unit/words/test_ablation_words.py): the sweep's
line for each verdict kind (said once, led by the weakest where helpers differ), the shapes'
variants (several knobs, combinations, untested, trapped), the introduced evidence, the
"changed nothing" trap where /server_info reports the same for both, the "no effect" note, a
knob that only turned a helper off, and a refused configuration. One golden line each; the
readings' tests assert the kinds and figures these lines render."""

from __future__ import annotations

from kltui.ablate.plan import Config
from kltui.readings.ablation import Ablation, HelperVerdict, Verdict
from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_introduced import Introduction
from kltui.readings.ablation_kinds import Effect, Missing, Shape, Step, Trap, VerdictKind
from kltui.readings.ablation_settings import SettingCheck
from kltui.readings.coverage import NotTested, Untested
from kltui.readings.identity import CheckBasis, Conflict, ConflictKind, ModelCheck, ModelState
from kltui.readings.paired import Paired
from kltui.words.ablation import helper_verdict_line, verdict_line
from kltui.words.ablation_config import (
    introduced_evidence,
    missing_text,
    no_effect_line,
    trap_line,
    turned_off_lines,
)

VACUOUS = Untested(NotTested.UNUSABLE, 0, 0, "vacuous")
BASE = Config("base")
CG = Config("cuda-graph=off", {"cuda-graph": "off"})


def level(value: float = 8.5e-3, helper: str = "match") -> HelperReading:
    return HelperReading(helper, "base", value, None, 32, 0, 0, 0, None, Effect.BASE)


def removed(config: str) -> HelperReading:
    return HelperReading("match", config, 0.0, 8.5e-3, 32, 32, 32, 0, None, Effect.REMOVED)


def sweep(verdict: Verdict, *helpers: HelperReading) -> Ablation:
    return Ablation(ConfigReading(BASE, helpers or (level(),)), (), verdict)


def shape(kind: VerdictKind, s: Shape, **kw) -> str:
    return helper_verdict_line(HelperVerdict("match", kind, s, level(), **kw))


def test_the_sweeps_line_for_each_verdict_kind():
    assert verdict_line(sweep(Verdict(VerdictKind.NOT_REPRODUCED), level(0.0))) == (
        "not reproduced: the base passes at the floor (match 0): nothing to localize"
    )
    gone = Ablation(
        ConfigReading(BASE, missing=Missing.BASE_NOT_RUN), (), Verdict(VerdictKind.INCONCLUSIVE)
    )
    assert verdict_line(gone) == "inconclusive: the base did not run, nothing to compare with"
    p = Paired("match", 12, 12, 0, 0, 1e6, 4.9e-4, 5.6e-3)
    r = HelperReading(
        "match", "cps=16", 5.6e-3, 0.0, 12, 0, 12, 0, None, Effect.INTRODUCED, higher=p
    )
    intro = Introduction("cps=16", "match", 0.0, 5.6e-3, (), r)
    v = Verdict(VerdictKind.INTRODUCED, (), Step.INTRODUCED, (), ("cps=16",), introduced=(intro,))
    assert verdict_line(sweep(v, level(0.0))) == (
        "introduced: cps=16 introduces a divergence: match 0 -> 5.6e-3 (higher than the base in "
        "12 of 12 samples (signed-rank p=0.00049)); the base passes at the floor (match 0)"
    )


def test_helpers_that_read_differently_are_led_by_the_weakest():
    det = (("deterministic=on", removed("deterministic=on")),)
    loc = HelperVerdict(
        "match", "localized", Shape.REMOVED, level(), ("deterministic=on",), found=det
    )
    dec = HelperVerdict(
        "decode_cache_hit", VerdictKind.NO_SINGLE, Shape.NO_SINGLE, level(0.5, "decode_cache_hit"),
        tried=("deterministic=on",),
    )  # fmt: skip
    ab = sweep(Verdict(VerdictKind.NO_SINGLE, (loc, dec)), level(), level(0.5, "decode_cache_hit"))
    assert verdict_line(ab) == (
        "no single knob overall (localized for match; no single knob for decode_cache_hit): "
        "localized: deterministic=on removes match's divergence (8.5e-3 -> 0, 32/32 samples "
        "bit-identical); no single knob explains decode_cache_hit's divergence (5e-1): none of "
        "deterministic=on removes or reduces it beyond chance"
    )


def test_the_shapes_variants_in_words():
    two = (("a=1", removed("a=1")), ("b=2", removed("b=2")))
    assert shape(VerdictKind.LOCALIZED, Shape.REMOVED, found=two) == (
        "localized: a=1 (8.5e-3 -> 0, 32/32 samples bit-identical) and b=2 (8.5e-3 -> 0, 32/32 "
        "samples bit-identical) each remove match's divergence"
    )
    off = {"untested_by": ("radix-cache=off",)}
    assert shape(
        VerdictKind.NO_SINGLE, Shape.NO_SINGLE, tried=("a=1",), combos=("a=1+b=2",), **off
    ) == (
        "no single knob explains match's divergence (8.5e-3): none of a=1 removes or reduces it "
        "beyond chance; nor do a=1+b=2; not tested by radix-cache=off"
    )
    assert shape(VerdictKind.INCONCLUSIVE, Shape.ALONE, trapped=("cuda-graph=off",)) == (
        "inconclusive for match's divergence (8.5e-3): no configuration besides the base counts "
        "(not counted, see its line: cuda-graph=off)"
    )
    assert shape(VerdictKind.INCONCLUSIVE, Shape.ALONE) == (
        "inconclusive for match's divergence (8.5e-3): no configuration besides the base counts "
        "(none was planned)"
    )


def test_the_introduced_evidence_in_words():
    on = HelperReading(
        "match", "cps=16", 4.7e-4, 0.0, 32, 29, 32, 29, None, Effect.INTRODUCED, samples=(4, 11, 23)
    )
    assert introduced_evidence(on) == (
        "orders of magnitude above rounding on #4, #11 and #23, the base at rounding level on "
        "every sample"
    )


def test_a_setting_reported_alike_for_both_and_a_confirmed_one_in_words():
    same = HelperReading("match", CG.name, 8.5e-3, 8.5e-3, 32, 0, 32, 32, None, Effect.SAME)
    alike = SettingCheck("cuda-graph", "disable_cuda_graph", "off", "off", "off", True, True)
    c = ConfigReading(CG, (same,), settings=(alike,), identical_to_base=True)
    assert c.trap == Trap.CHANGED_NOTHING and c.took_effect is True
    assert trap_line(c) == (
        "cuda-graph=off: changed nothing: every helper bit-identical to the base (match 32/32 "
        "samples) and /server_info reports disable_cuda_graph=true for the base as well, so it "
        "cannot tell: either the flag did not take effect (check its guard) or the divergence "
        "does not depend on it"
    )
    told = SettingCheck("cuda-graph", "disable_cuda_graph", "off", "on", "off", True, False)
    c = ConfigReading(CG, (same,), settings=(told,), identical_to_base=True)
    assert c.no_effect and no_effect_line(c) == (
        "cuda-graph=off: no effect: /server_info reports disable_cuda_graph=true and every helper "
        "is bit-identical to the base (match 32/32 samples): the divergence does not depend on "
        "this setting"
    )


def test_a_knob_that_turned_a_helper_off_and_a_refused_one_in_words():
    off = SettingCheck("radix-cache", "disable_radix_cache", "off", "on", "off", True, False)
    nt = HelperReading(
        "decode_cache_hit", "radix-cache=off", None, 0.5, 0, 0, 0, 0, VACUOUS, Effect.NOT_TESTED,
        blamed=off,
    )  # fmt: skip
    cfg = ConfigReading(Config("radix-cache=off", {"radix-cache": "off"}), (nt,), settings=(off,))
    assert turned_off_lines(cfg) == [
        "radix-cache=off: decode_cache_hit not tested (ran but compared nothing: radix-cache=off "
        "turned the radix cache off (/server_info reports disable_radix_cache=true, for the base "
        "false), so no cache hit can happen): turning a helper off is not a fix"
    ]
    why = ModelCheck(ModelState.DIFFERENT, CheckBasis.LOCAL_HASH, "ab" * 32, "cd" * 32, "llama")
    clash = Conflict(ConflictKind.DIFFERENT_MODEL, "http://a:1", "http://b:2", check=why)
    fa3 = Config("attention-backend=fa3", {"attention-backend": "fa3"})
    refused = ConfigReading(fa3, missing=Missing.REFUSED, refused=clash)
    assert missing_text(refused) == (
        "refused: http://b:2 serves another model than http://a:1 (the config.json and "
        "*.safetensors differ on this machine (sha256 abababababab… vs cdcdcdcdcdcd…) although "
        "both folders are named llama): their numbers cannot be compared"
    )
