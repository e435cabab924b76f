"""The words of a server's diagnosis (`readings/diagnosis.py`): one headline per `Finding`
from its figures, then the evidence, suspects and next step (`said`), and the JSON form
(`to_json`, docs/JSON.md `diagnosis`). Every front end shows these words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kltui.fmt import sci
from kltui.readings.coverage import NOT_RUN
from kltui.readings.diagnosis_parts import Headline
from kltui.readings.findings import Basis, Finding
from kltui.readings.verdict import Diagnosis
from kltui.registry import path_of
from kltui.words import evidence as evidence_words
from kltui.words import rl as rl_words
from kltui.words.advice import command, step, suspect
from kltui.words.common import (
    MIN_COMMON,
    STRAY_ULP_FLOOR,
    joined,
    plural,
    rests_on,
    shown_ids,
    tail,
    uncrossed_tail,
    untested_tail,
)
from kltui.words.coverage import untested_map, untested_words
from kltui.words.diagnosis_noisy import NOISY


def _nonfinite_prefix(helpers: tuple[str, ...]) -> str:
    if not helpers:
        return ""
    return (
        f"non-finite logprobs at the same positions on both sides in {', '.join(helpers)} "
        "(a numeric fault, see evidence); otherwise "
    )


# --------------------------------------------------------------------------- before any path test
def _pending(h: Headline, b: Basis) -> str:
    return "the file is still being read" if h.importing else "no helper finished yet"


def _nothing_tested(h: Headline, b: Basis) -> str:
    return f"inconclusive: no helper tested its path ({untested_tail(b.untested)})"


def _sampling(h: Headline, b: Basis) -> str:
    return (
        f"no kernel verdict: temperature {h.temperature:g} > 0, so k3 measures sampling, not "
        "kernels (prefill and decode may score different draws)"
    )


def _exact(h: Headline, b: Basis) -> str:
    more = (
        f" on the paths tested; not run (not asked for): {', '.join(h.others)}" if h.others else ""
    )
    gate = "".join(f"; but {x} fails its gate ({w})" for x, w in h.fails)
    scope = " on the samples compared" if h.partial else ""
    return (
        _nonfinite_prefix(h.nonfinite) + "bit-identical: prefill and decode agree exactly in "
        f"every helper (conditions 1 and 2 hold{more}{scope}){gate}"
        + uncrossed_tail(b.uncrossed)
        + rests_on(b)
    )


def _exact_where_tested(h: Headline, b: Basis) -> str:
    held = (
        "condition 1 holds on match's shapes; condition 2 is not established: "
        if h.match_tested
        else "neither condition is established (match not tested): "
    )
    return (
        _nonfinite_prefix(h.nonfinite)
        + f"inconclusive: bit-identical where tested ({', '.join(h.helpers)}); "
        + held
        + untested_tail(b.untested)
        + uncrossed_tail(b.uncrossed)
        + rests_on(b)
    )


def _baseline_not_tested(h: Headline, b: Basis) -> str:
    return (
        f"inconclusive: {joined(h.helpers)} diverge{plural(len(h.helpers))} but {h.base} was "
        f"not tested ({untested_words(h.why or NOT_RUN)}): kernel noise and a state bug cannot be told apart"
        + rests_on(b)
    )


# --------------------------------------------------------------------------- match exact
def _state_bug(h: Headline, b: Basis) -> str:
    verb = "diverge" if len(h.helpers) > 1 else "diverges"
    return (
        f"condition 2 (state bug): match is bit-identical but {joined(h.helpers)} {verb} "
        f"beyond chance, so the kernels agree and the fault is in {path_of(h.primary or '')}"
        + tail(b)
    )


def _state_unclear(h: Headline, b: Basis) -> str:
    return (
        f"inconclusive: match is bit-identical and {joined(h.helpers)} differ"
        f"{plural(len(h.helpers))} in too few samples to tell a state bug from noise "
        f"that every path shares and match missed by chance (p={h.p:.2g})" + tail(b)
    )


def _stray_ulps(h: Headline, b: Basis) -> str:
    return (
        f"stray ulps only: match is bit-identical and {joined(h.helpers)} differs at "
        f"rounding level ({sci(h.level)}), below the "
        f"{STRAY_ULP_FLOOR:g} floor where no state bug sits: not condition 2" + tail(b)
    )


def _direct_state(h: Headline, b: Basis) -> str:
    ids, helper = h.samples, h.helpers[0]
    return (
        f"condition 2 (state bug) on {len(ids)} sample{'' if len(ids) == 1 else 's'} "
        f"({shown_ids(ids)}): match stays at rounding level on every sample "
        f"({sci(h.match_level)}) while {helper} reaches {sci(h.level)} on the same prompts, "
        f"orders of magnitude beyond what rounding gives: a state bug on {path_of(helper)}"
        + tail(b)
    )


def _too_few_common(h: Headline, b: Basis) -> str:
    return (
        f"inconclusive (n too small): match diverges ({sci(h.match_level)}), and whether "
        f"{joined(h.helpers)} add{plural(len(h.helpers))} a state "
        f"bug cannot be told on {h.n} common samples (at least {MIN_COMMON} needed)" + tail(b)
    )


def _only_in(h: Headline, whose: str, rest: str) -> str:
    """match differs only in the samples of a split (`whose` names them, `rest` the others)."""
    k = len(h.samples)
    only = "exactly the" if k == h.n else f"{k} of the"
    return (
        f"match differs only in {only} {h.n} sample{'' if h.n == 1 else 's'} whose decode "
        f"{whose} ({shown_ids(h.samples)}) and is bit-identical in the {h.cold} that {rest}"
    )


def _restored(h: Headline) -> str:
    return _only_in(h, f"reused at least {h.least} cached tokens", "reused fewer")


def _past_window(h: Headline) -> str:
    return _only_in(h, f"passed the {h.least}-token sliding window", "stayed within it")


def _also(h: Headline) -> str:
    """The cache paths that diverge beyond chance against match's exact samples, if any."""
    if not h.helpers:
        return ""
    n = len(h.helpers)
    return f"; {joined(h.helpers)} diverge{plural(n)} beyond chance against match's exact samples"


def _restore_state(h: Headline, b: Basis) -> str:
    return (
        f"condition 2 (state bug): {_restored(h)}, so the kernels agree and the divergence "
        f"follows the reused cache{_also(h)}: the fault is in {path_of(h.primary or '')}, not "
        "in the kernels" + tail(b)
    )


def _restore_unclear(h: Headline, b: Basis) -> str:
    return (
        f"inconclusive: {_restored(h)}: a state bug on the restore rather than kernel noise, "
        f"unless chance put every difference there (p={h.p:.2g})" + tail(b)
    )


def _window_state(h: Headline, b: Basis) -> str:
    return (
        f"condition 2 (state bug): {_past_window(h)}, so the kernels agree and the divergence "
        f"follows the window{_also(h)}: the fault is in the sliding window's eviction during "
        "decode, not in the kernels" + tail(b)
    )


def _window_unclear(h: Headline, b: Basis) -> str:
    return (
        f"inconclusive: {_past_window(h)}: a state bug on the window rather than kernel noise, "
        f"unless chance put every difference there (p={h.p:.2g})" + tail(b)
    )


_LABELS: dict[Finding, Callable[[Headline, Basis], str]] = {
    Finding.WINDOW_STATE: _window_state,
    Finding.WINDOW_UNCLEAR: _window_unclear,
    Finding.RESTORE_STATE: _restore_state,
    Finding.RESTORE_UNCLEAR: _restore_unclear,
    Finding.PENDING: _pending,
    Finding.NOTHING_TESTED: _nothing_tested,
    Finding.SAMPLING: _sampling,
    Finding.EXACT: _exact,
    Finding.EXACT_WHERE_TESTED: _exact_where_tested,
    Finding.BASELINE_NOT_TESTED: _baseline_not_tested,
    Finding.STATE_BUG: _state_bug,
    Finding.STATE_UNCLEAR: _state_unclear,
    Finding.STRAY_ULPS: _stray_ulps,
    Finding.DIRECT_STATE: _direct_state,
    Finding.TOO_FEW_COMMON: _too_few_common,
    **NOISY,
}


def label(d: Diagnosis) -> str:
    """The diagnosis's headline: what was found, what was not tested, what it rests on."""
    if d.finding is Finding.IMPORTED:
        if d.imported is not None:
            return rl_words.label(d.imported)
        return d.headline.text or ""
    return _LABELS[d.finding](d.headline, d.basis)


@dataclass(frozen=True)
class DiagnosisText:
    """A diagnosis in words, as every view shows it."""

    label: str
    evidence: list[str]
    suspects: list[str]
    next_step: str | None
    next_command: str | None


def said(d: Diagnosis, explain: bool = True) -> DiagnosisText:
    """The diagnosis's words (`explain=False`: without the statistics' lines, which
    `kltui check --explain` shows)."""
    lines = [e for e in d.evidence if explain or not e.statistic]
    if d.imported is not None:  # an imported file's reading: its step and command
        next_step, next_command = rl_words.next_step(d.imported), rl_words.next_command(d.imported)
    else:
        next_step = None if d.step is None else step(d.step)
        next_command = None if d.command is None else command(d.command)
    return DiagnosisText(
        label=label(d),
        evidence=[evidence_words.line(e) for e in lines],
        suspects=[suspect(s) for s in d.suspects],
        next_step=next_step,
        next_command=next_command,
    )


def to_json(d: Diagnosis) -> dict[str, Any]:
    """The JSON form (docs/JSON.md `diagnosis`)."""
    text = said(d)
    return {
        "server": d.server,
        "condition": d.condition,
        "conditions": list(d.conditions),
        "finding": str(d.finding),
        "label": text.label,
        "evidence": text.evidence,
        "suspects": text.suspects,
        "next_step": text.next_step,
        "next_command": text.next_command,
        "action": d.action,
        "rests_on": {
            "tested": [t.to_json() for t in d.basis.tested],
            "untested": untested_map(d.basis.untested),
        },
        "limits": [lim.to_json() for lim in d.limits],
    }
