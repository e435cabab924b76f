"""The ablation table's last column in words (every medium shows it: the console, Markdown,
JUnit, HTML, the TUI's matrix): a configuration's trap, failure or why it has no result, the
helpers it left untested, and its stressed verdict (`readings/ablation_stress.config_stress`)."""

from __future__ import annotations

from kltui.ablate.sweep import FAILED, ConfigRun
from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_kinds import Effect, Missing, Trap
from kltui.readings.ablation_stress import config_stress
from kltui.words.ablation_config import missing_text
from kltui.words.ablation_stress import verdict_of

# a trap in the table's few words (`trap_line` says it in full under the table)
TRAP_NOTE = {
    Trap.NOT_TAKEN: "the flag did not take effect",
    Trap.CHANGED_NOTHING: "changed nothing",
}
NO_EFFECT_NOTE = "no effect (took effect)"


def stress_verdict(run: ConfigRun | None) -> str | None:
    """The configuration's quiet-vs-stressed verdict, or None without --stress."""
    c = config_stress(run)
    return None if c is None else verdict_of(c)


def untested_note(helpers: list[str]) -> str:
    """The helpers a measured configuration left untested where the base tested them."""
    return f"not tested: {', '.join(helpers)}"


def _note(c: ConfigReading, run: ConfigRun | None) -> str:
    if run is not None and run.status == FAILED:
        return f"failed ({run.error_kind})"
    if not c.measured:  # measured but refused (another model, the same process) says why
        refused = missing_text(c) if c.missing == Missing.REFUSED else None
        return refused or (run.status if run is not None else "not measured")
    if c.trap is not None:
        return TRAP_NOTE[c.trap]
    if c.no_effect:
        return NO_EFFECT_NOTE
    untested = [
        h.helper for h in c.helpers if h.effect == Effect.NOT_TESTED and h.base_level is not None
    ]
    if untested:
        return untested_note(untested)
    return ""


def note(c: ConfigReading, run: ConfigRun | None) -> str:
    """The table's last column: a trap, a failure or why it has no result, and what --stress
    found (plain text)."""
    said = _note(c, run)
    loud = stress_verdict(run)
    if loud is None:
        return said
    return f"{said}; under --stress: {loud}" if said else f"under --stress: {loud}"


__all__ = ["NO_EFFECT_NOTE", "TRAP_NOTE", "note", "stress_verdict", "untested_note"]
