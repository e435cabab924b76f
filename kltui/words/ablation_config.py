"""An ablation's configurations in words (`readings/ablation_config.ConfigReading`, its helpers'
`HelperReading`): the level notation, each helper's cell and line, why an effect is
inconclusive, a configuration's line, its trap, its "no effect" note, why it has no result.
The same words in the console, the reports, the JSON document and the TUI's matrix."""

from __future__ import annotations

import math
from collections.abc import Sequence

from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_kinds import (
    BASE_EFFECT,
    BASE_NOT_TESTED,
    INTRODUCED,
    NOT_TESTED,
    SAME,
    Missing,
    Trap,
    Why,
)
from kltui.readings.findings import Kind
from kltui.readings.paired import MIN_COMMON, sign_p
from kltui.run.refusal import refusal
from kltui.untrusted import one_line
from kltui.words.coverage import untested_words


def num(x: float | None) -> str:
    """A level as the verdicts print it: 0, 8.5e-3, 1.2e-12 (– for unknown)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf"
    mant, exp = f"{x:.1e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def ids_text(ids: Sequence[int]) -> str:
    """ "#3, #17 and #29" (the first 8)."""
    shown = [f"#{i}" for i in ids[:8]]
    more = f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    if len(shown) > 1 and not more:
        return f"{', '.join(shown[:-1])} and {shown[-1]}"
    return ", ".join(shown) + more


def shown(x: object) -> str:
    """A reported setting as JSON writes it (server text: one line, cut)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    return "null" if x is None else one_line(x, 40)


# --------------------------------------------------------------------------- one helper
def arrow(h: HelperReading) -> str:
    """ "8.5e-3 -> 0"."""
    return f"{num(h.base_level)} -> {num(h.level)}"


def untested_text(h: HelperReading) -> str | None:
    """Why the helper tested nothing; the configuration's own knob named when it turned the
    radix cache off (the helper's own words can only guess at a cause)."""
    off = h.blamed
    if off is None:
        return None if h.untested is None else untested_words(h.untested)
    return (
        f"ran but compared nothing: {off.knob}={off.asked} turned the radix cache off "
        f"(/server_info reports {off.key}=true, for the base {shown(off.base_raw)}), so no "
        "cache hit can happen"
    )


def why_text(h: HelperReading) -> str | None:
    """Why an effect is inconclusive, with the figures of the test it rests on."""
    p = h.lower
    if h.why is None or p is None:
        return None
    if h.why == Why.TOO_FEW:
        return f"n too small: {p.n} common samples, {MIN_COMMON} needed"
    if h.why == Why.NOISE_GATE:
        return (
            f"inside the noise: the base above the gate on {p.higher} of {p.n} samples where "
            f"this configuration is not, the other way on {p.lower} (sign test "
            f"p={sign_p(p.higher, p.lower):.2g})"
        )
    return f"inside the noise: lower on {p.higher} of {p.n} samples, signed-rank p={p.p:.2g}"


def cell(h: HelperReading) -> str:
    """The helper's cell in the console table of knobs x helpers."""
    if h.effect == BASE_EFFECT:
        return num(h.level)
    if h.effect in (NOT_TESTED, BASE_NOT_TESTED):
        return h.effect
    if h.effect == SAME:
        return f"{num(h.level)} (= base)"
    return f"{num(h.level)} ({h.effect})"


def introduced_evidence(h: HelperReading) -> str:
    """What an introduced divergence rests on: the samples orders of magnitude above
    rounding where the base is at rounding level on every sample, or the paired test."""
    if h.samples:
        return (
            f"orders of magnitude above rounding on {ids_text(h.samples)}, the base at "
            "rounding level on every sample"
        )
    p = h.higher
    if p is None:
        return "above the base's floor"
    return f"higher than the base in {p.higher} of {p.n} samples ({h.test} p={p.p:.2g})"


def helper_line(h: HelperReading) -> str:
    """One line: the level against the base, the effect and what it rests on."""
    if h.effect == BASE_EFFECT:
        if h.untested is not None:
            return f"{h.helper}: not tested ({untested_words(h.untested)})"
        return f"{h.helper}: avg_kl_div {num(h.level)}, {h.exact_samples}/{h.scored} samples bit-identical"
    if h.effect == NOT_TESTED:
        return f"{h.helper}: not tested ({untested_text(h)}): not a fix"
    if h.effect == BASE_NOT_TESTED:
        return f"{h.helper}: {num(h.level)}; the base did not test it, nothing to compare"
    rest = (
        f"{h.exact_samples}/{h.scored} samples bit-identical; "
        f"{h.identical_to_base}/{h.common} identical to the base"
    )
    if h.effect == INTRODUCED:
        return f"{h.helper}: {arrow(h)} (introduced: {introduced_evidence(h)}; {rest})"
    p = h.lower
    test = (
        f"; lower than the base in {p.higher} of {p.n} samples, higher in {p.lower} "
        f"({h.test} p={p.p:.2g})"
        if p is not None and p.n
        else ""
    )
    why = f": {w}" if (w := why_text(h)) else ""
    if h.samples:
        why = f" {ids_text(h.samples)}, at rounding level on every sample" + why
    return f"{h.helper}: {arrow(h)} ({h.effect}{why}; {rest}{test})"


# --------------------------------------------------------------------------- one configuration
def missing_text(c: ConfigReading) -> str | None:
    """Why a configuration has no result (None: it has one)."""
    if c.missing is None:
        return None
    if c.missing == Missing.REFUSED and c.refused is not None:
        return f"refused: {refusal(c.refused)}"
    if c.missing in (Missing.NOT_RUN, Missing.BASE_NOT_RUN):
        return f"no result: {c.missing}"
    return str(c.missing)


def condition_cell(c: ConfigReading) -> str:
    """The condition as every table shows it, from the configuration's one diagnosis: 0, 1,
    2, "1+2" when it shows both, inconclusive; – unmeasured."""
    if not c.measured:
        return "–"
    if c.kind is None or c.kind == Kind.UNKNOWN:
        return "inconclusive"
    return "0" if c.kind == Kind.EXACT else str(c.kind)


def _identical_counts(c: ConfigReading) -> str:
    return ", ".join(f"{h.helper} {h.identical_to_base}/{h.common}" for h in c.helpers if h.common)


def trap_line(c: ConfigReading) -> str | None:
    """The line naming a flag that changed nothing (None: not this trap)."""
    if c.trap == Trap.NOT_TAKEN and (bad := c.not_taken) is not None:
        return (
            f"{c.config.name}: the flag did not take effect: /server_info reports "
            f"{bad.key}={shown(bad.raw)}, the base's value ({bad.knob}={bad.reported}): "
            "check its guard"
        )
    if c.trap != Trap.CHANGED_NOTHING:
        return None
    said = ", ".join(f"{s.key}={shown(s.raw)}" for s in c.settings if s.key)
    reason = (
        f"/server_info reports {said} for the base as well, so it cannot tell"
        if c.took_effect and said
        else "/server_info does not say whether it took effect"
    )
    return (
        f"{c.config.name}: changed nothing: every helper bit-identical to the base "
        f"({_identical_counts(c)} samples) and {reason}: either the flag did not "
        "take effect (check its guard) or the divergence does not depend on it"
    )


def no_effect_line(c: ConfigReading) -> str | None:
    """The line for a flag that /server_info confirms and that changed no bit of any helper
    (None: not so)."""
    if not c.no_effect:
        return None
    said = ", ".join(f"{s.key}={shown(s.raw)}" for s in c.settings)
    return (
        f"{c.config.name}: no effect: /server_info reports {said} and every helper is "
        f"bit-identical to the base ({_identical_counts(c)} samples): the divergence "
        "does not depend on this setting"
    )


def turned_off_lines(c: ConfigReading) -> list[str]:
    """A knob that only turned a helper off: each such helper "not tested", never fixed."""
    return [
        f"{c.config.name}: {h.helper} not tested ({untested_text(h)}): turning a helper off is not a fix"
        for h in c.turned_off()
    ]


def config_line(c: ConfigReading) -> str:
    """The configuration in one line."""
    if not c.measured:
        return f"{c.config.name}: not measured ({missing_text(c)})"
    cond_cell = condition_cell(c)
    cond = cond_cell if cond_cell == "inconclusive" else f"condition {cond_cell}"
    # a trapped configuration's levels are shown, never its effects: they do not count
    parts = ", ".join(
        f"{h.helper} {num(h.level) if c.trap and h.level is not None else cell(h)}"
        for h in c.helpers
    )
    trap = f"; {trap_line(c)}" if c.trap else ""
    return f"{c.config.name}: {parts} [{cond}]{trap}"


__all__ = [
    "arrow", "cell", "condition_cell", "config_line", "helper_line", "ids_text",
    "introduced_evidence", "missing_text", "no_effect_line", "num", "shown", "trap_line",
    "turned_off_lines", "untested_text", "why_text",
]  # fmt: skip
