"""An ablation's verdict in words (`readings/ablation.Ablation`): each diverging helper's line
by the shape its verdict rests on, the sweep's line (each verdict word said once), the knobs
that introduce a divergence, the traps and notes, the next step, and the console lines of the
whole sweep. The configurations' own words are words/ablation_config.py's."""

from __future__ import annotations

import math
from collections.abc import Sequence

from kltui.readings.ablation import Ablation, HelperVerdict, Verdict
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_introduced import Introduction
from kltui.readings.ablation_kinds import (
    INTRODUCED_KIND,
    NOT_REPRODUCED,
    REDUCED_BY,
    REMOVED_ON,
    Shape,
    Step,
    VerdictKind,
)
from kltui.readings.paired import MIN_COMMON
from kltui.words.ablation_config import (
    arrow,
    config_line,
    ids_text,
    introduced_evidence,
    no_effect_line,
    num,
    trap_line,
    turned_off_lines,
    why_text,
)
from kltui.words.coverage import untested_words

Found = Sequence[tuple[str, HelperReading]]


def _removal(r: HelperReading) -> str:
    if r.effect == REMOVED_ON:
        return f"{arrow(r)}, at rounding level on every sample"
    return f"{arrow(r)}, {r.exact_samples}/{r.scored} samples bit-identical"


def _each(found: Found) -> tuple[str, str]:
    """The configurations with what each did, and the verb for one or several."""
    what = " and ".join(f"{n} ({_removal(r)})" for n, r in found)
    return what, "removes" if len(found) == 1 else "each remove"


def _localized(hv: HelperVerdict) -> str:
    helper, found = hv.helper, hv.found
    what, verb = _each(found)
    if hv.shape == Shape.REMOVED:
        if len(found) == 1:
            n, r = found[0]
            return f"localized: {n} removes {helper}'s divergence ({_removal(r)})"
        return f"localized: {what} {verb} {helper}'s divergence"
    if hv.shape == Shape.TOGETHER:
        return (
            f"localized: no single knob explains {helper}'s divergence; together {what} {verb} it"
        )
    ids = hv.samples
    together = hv.shape == Shape.ON_SAMPLES_TOGETHER
    lead = f"no single knob explains {helper}'s divergence; together " if together else ""
    return (
        f"localized on {len(ids)} sample{'s' if len(ids) != 1 else ''} ({ids_text(ids)}): {lead}"
        f"{what} {verb} {helper}'s divergence there, where the base sits orders of magnitude "
        "above rounding"
    )


def _reduced(hv: HelperVerdict) -> str:
    what = " and ".join(
        f"{n} ({arrow(r)}, x{1 / (r.change or math.inf):.3g} lower, p={r.lower.p:.2g})"
        if r.lower is not None
        else f"{n} ({arrow(r)})"
        for n, r in hv.found
    )
    return (
        f"reduced: {what} lowers {hv.helper}'s divergence at least {REDUCED_BY:g}x beyond "
        "chance, not to the floor"
    )


def _inconclusive(hv: HelperVerdict) -> str:
    head = f"inconclusive for {hv.helper}'s divergence ({num(hv.base.level)}): "
    if hv.shape == Shape.BLIND:
        return (
            f"{head}no configuration that took effect tested its path (not tested by "
            f"{', '.join(hv.untested_by)})"
        )
    if hv.shape == Shape.ALONE:
        parts = [f"not measured: {', '.join(hv.missing)}"] * bool(hv.missing) + [
            f"not counted, see its line: {', '.join(hv.trapped)}"
        ] * bool(hv.trapped)
        return (
            f"{head}no configuration besides the base counts "
            f"({'; '.join(parts) or 'none was planned'})"
        )
    scored = hv.base.scored
    why = [f"the base scored {scored} samples ({MIN_COMMON} needed)"] * (scored < MIN_COMMON)
    why += [f"{n}: {arrow(r)}, {why_text(r)}" for n, r in hv.found]
    return head + "; ".join(why)


def helper_verdict_line(hv: HelperVerdict) -> str:
    """The verdict on one helper's divergence in one line."""
    if hv.shape in (Shape.REMOVED, Shape.TOGETHER, Shape.ON_SAMPLES, Shape.ON_SAMPLES_TOGETHER):
        return _localized(hv)
    if hv.shape == Shape.REDUCED:
        return _reduced(hv)
    if hv.shape == Shape.NO_SINGLE:
        also = f"; nor do {', '.join(hv.combos)}" if hv.combos else ""
        off = f"; not tested by {', '.join(hv.untested_by)}" if hv.untested_by else ""
        return (
            f"no single knob explains {hv.helper}'s divergence ({num(hv.base.level)}): none of "
            f"{', '.join(hv.tried)} removes or reduces it beyond chance{also}{off}"
        )
    return _inconclusive(hv)


def _joined(verdicts: Sequence[HelperVerdict], kind: VerdictKind) -> str:
    """The helpers' lines as one, each verdict word said once ("localized: A removes match's
    divergence (...); A removes decode_cache_hit's divergence (...)"). Helpers that read
    differently are led by the overall kind (the weakest, which sets the exit code) and each
    helper's: "no single knob overall (localized for match; no single knob for
    decode_cache_hit): localized: ...; no single knob explains ..."."""
    kinds = list(dict.fromkeys(hv.kind for hv in verdicts))
    lead = ""
    if len(kinds) > 1:
        each = "; ".join(f"{hv.kind} for {hv.helper}" for hv in verdicts)
        lead = f"{kind} overall ({each}): "
    out: list[str] = []
    said = None
    for hv in verdicts:
        prefix, text = f"{hv.kind}: ", helper_verdict_line(hv)
        if text.startswith(prefix):
            if said == hv.kind:
                text = text[len(prefix) :]
            said = hv.kind
        else:
            said = None
        out.append(text)
    return lead + "; ".join(out)


def introduced_line(found: Sequence[Introduction]) -> str:
    """ "chunked-prefill-size=16 introduces a divergence: match 0 -> 5.6e-3 (higher than the
    base in 12 of 12 samples (signed-rank p=0.00049)); ..." one clause per configuration."""
    order = list(dict.fromkeys(i.config for i in found))
    parts = []
    for name in order:
        each = ", ".join(
            f"{i.helper} {num(i.base_level)} -> {num(i.level)} ({introduced_evidence(i.reading)})"
            for i in found
            if i.config == name
        )
        parts.append(f"{name} introduces a divergence: {each}")
    return "; ".join(parts)


def _base_untested(ab: Ablation) -> list[str]:
    return [
        f"{h.helper} not tested in the base ({untested_words(h.untested)})"
        for h in ab.base_untested
        if h.untested is not None
    ]


def verdict_line(ab: Ablation) -> str:
    """The sweep's verdict in one line."""
    v = ab.verdict
    if not ab.base.measured:
        return "inconclusive: the base did not run, nothing to compare with"
    not_tested = _base_untested(ab)
    if not ab.tested:
        return "inconclusive: the base tested nothing" + (
            f" ({'; '.join(not_tested)})" if not_tested else ""
        )
    levels = ", ".join(f"{h.helper} {num(h.level)}" for h in ab.tested)
    if v.kind == INTRODUCED_KIND:
        return (
            f"introduced: {introduced_line(v.introduced)}; the base passes at the floor ({levels})"
        )
    if v.kind == NOT_REPRODUCED:
        line = f"not reproduced: the base passes at the floor ({levels}): nothing to localize"
        return line + (f"; {'; '.join(not_tested)}" if not_tested else "")
    line = _joined(v.helpers, v.kind)
    return line + (f"; {introduced_line(v.introduced)}" if v.introduced else "")


_STEPS = {
    Step.CHAIN: "find the module: relaunch the base with the dumper's environment, "
    "--disable-cuda-graph and --disable-prefill-cuda-graph, and run kltui dumps",
    Step.MORE_SAMPLES: "re-run with more samples (--samples 32)",
    Step.LONGER: "re-run with more samples or longer generations, so the paired test can tell",
    Step.VARY_OTHER: "vary other knobs, or find the module on the base with kltui dumps",
    Step.PAIRS: "re-run with --pairs: the knobs that moved it most, two at a time",
    Step.TEST_PATHS: "make the base's helpers test their paths",
    Step.ALONE: "measure at least one other configuration: fix the failed ones (their lines "
    "say why) or vary a knob that takes effect",
}


def next_step(v: Verdict) -> str | None:
    """The next step in words (None: there is none)."""
    if v.step is None:
        return None
    names = ", ".join(v.step_configs)
    if v.step == Step.BLIND:
        return f"vary knobs that leave {', '.join(v.step_helpers)} testing its path ({names} turned it off)"
    if v.step == Step.INTRODUCED:
        verb = "breaks" if len(v.step_configs) == 1 else "each break"
        return (
            f"{names} {verb} the base's bit-exactness: keep the base's setting, or find "
            "the module on a server launched with it (kltui dumps)"
        )
    return _STEPS[v.step]


def trap_lines(ab: Ablation) -> list[str]:
    """The traps: flags that changed nothing, then knobs that only turned a helper off."""
    traps = [t for c in ab.configs if (t := trap_line(c)) is not None]
    return traps + [line for c in ab.configs for line in turned_off_lines(c)]


def notes(ab: Ablation) -> list[str]:
    """Knobs with no effect (measured, a setting tried), then the base's untested helpers."""
    said = [t for c in ab.no_effect if (t := no_effect_line(c)) is not None]
    return said + _base_untested(ab)


def lines(ab: Ablation) -> list[str]:
    """The console lines: every configuration, then the traps, then the verdict and the
    next step."""
    out = [config_line(c) for c in (ab.base, *ab.configs)]
    out += trap_lines(ab) + notes(ab)
    out.append(verdict_line(ab))
    if step := next_step(ab.verdict):
        out.append(f"next: {step}")
    return out


__all__ = [
    "helper_verdict_line", "introduced_line", "lines", "next_step", "notes", "trap_lines",
    "verdict_line",
]  # fmt: skip
