"""The JSON `ablation` document of a sweep (shape: readings/ablation.py's docstring,
kltui/schemas/ablation.schema.json, docs/JSON.md): the reading's kinds and figures with the
lines words/ablation.py and words/ablation_config.py say of them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kltui.readings.ablation import Ablation, HelperVerdict, Verdict
from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_introduced import Introduction
from kltui.words.ablation import helper_verdict_line, next_step, trap_lines, verdict_line
from kltui.words.ablation_config import (
    helper_line,
    introduced_evidence,
    missing_text,
    trap_line,
    untested_text,
    why_text,
)
from kltui.words.diagnosis import label


def helper_json(h: HelperReading) -> dict[str, Any]:
    """The helper's entry in a configuration of the JSON `ablation` document."""
    p = h.lower
    return {
        "avg_kl_div": h.level,
        "base_avg_kl_div": h.base_level,
        "change": h.change,
        "scored": h.scored,
        "exact_samples": h.exact_samples,
        "common_samples": h.common,
        "identical_to_base_samples": h.identical_to_base,
        "untested": untested_text(h),
        "untested_kind": h.not_tested,
        "effect": h.effect,
        "why": why_text(h),
        "samples": list(h.samples),
        "paired": None
        if p is None
        else {
            "n": p.n,
            "higher": p.higher,
            "lower": p.lower,
            "equal": p.equal,
            "p": p.p,
            "ratio": p.ratio if math.isfinite(p.ratio) else None,
            "shift_p": p.shift_p,
            "test": h.test,
        },
        "line": helper_line(h),
    }


def config_json(c: ConfigReading, helpers: Sequence[str]) -> dict[str, Any]:
    """The configuration's entry in the JSON `ablation` document."""
    return c.config.to_json() | {
        "measured": c.measured,
        "missing": missing_text(c),
        "condition": c.condition,
        "conditions": list(c.conditions),
        # the diagnosis's label (its words; the reading holds it typed)
        "diagnosis": None if c.diagnosis is None else label(c.diagnosis),
        "took_effect": c.took_effect,
        "settings": {s.key or s.knob: s.to_json() for s in c.settings},
        "identical_to_base": c.identical_to_base,
        "trap": trap_line(c),
        "trap_kind": c.trap,
        "counted": c.measured and c.trap is None,  # false: not part of the verdict
        "movement": c.movement(helpers),
        "helpers": {h.helper: helper_json(h) for h in c.helpers},
    }


def _helper_verdict_json(hv: HelperVerdict) -> dict[str, Any]:
    return {
        "helper": hv.helper,
        "kind": hv.kind,
        "shape": hv.shape,
        "line": helper_verdict_line(hv),
        "sufficient": list(hv.sufficient),
        "reducing": list(hv.reducing),
        "untested_by": list(hv.untested_by),
        "samples": list(hv.samples),
    }


def _introduction_json(i: Introduction) -> dict[str, Any]:
    return {
        "config": i.config,
        "helper": i.helper,
        "base_avg_kl_div": i.base_level,
        "avg_kl_div": i.level,
        "samples": list(i.samples),
        "evidence": introduced_evidence(i.reading),
    }


def verdict_json(ab: Ablation) -> dict[str, Any]:
    """The verdict as the JSON `ablation` document writes it."""
    v: Verdict = ab.verdict
    return {
        "kind": v.kind,
        "line": verdict_line(ab),
        "helpers": [_helper_verdict_json(h) for h in v.helpers],
        "traps": trap_lines(ab),
        "next_step": next_step(v),
        "step": v.step,
        "chain": v.chain,
        "introduced": [_introduction_json(i) for i in v.introduced],
    }


def ablation_json(ab: Ablation) -> dict[str, Any]:
    """The JSON `ablation` document."""
    return {
        "base": ab.base.config.name,
        "floor": ab.floor,
        "verdict": verdict_json(ab),
        "configs": [config_json(c, ab.diverging) for c in (ab.base, *ab.configs)],
    }


__all__ = ["ablation_json", "config_json", "helper_json", "verdict_json"]
