"""The ablation table's last column in words (every medium shows it: the console, Markdown,
JUnit, HTML, the TUI's matrix): a configuration's trap, failure or why it has no result, the
helpers it left untested, and its stressed verdict (`readings/ablation_stress.config_stress`)."""

from __future__ import annotations

from enum import StrEnum

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


class NoteKind(StrEnum):
    """Which case the note says (the TUI's matrix colours the verdict cell by it)."""

    FAILED = "failed"
    UNMEASURED = "unmeasured"  # refused, not run, interrupted
    NOT_TAKEN = "not-taken"  # Trap.NOT_TAKEN
    CHANGED_NOTHING = "changed-nothing"  # Trap.CHANGED_NOTHING
    NO_EFFECT = "no-effect"
    UNTESTED = "untested"  # helpers the base tested and this configuration did not
    NONE = "none"  # nothing to note (beside --stress's verdict, if any)


def _untested(c: ConfigReading) -> list[str]:
    return [
        h.helper for h in c.helpers if h.effect == Effect.NOT_TESTED and h.base_level is not None
    ]


def note_kind(c: ConfigReading, run: ConfigRun | None) -> NoteKind:
    """The case the note's first part says."""
    if run is not None and run.status == FAILED:
        return NoteKind.FAILED
    if not c.measured:
        return NoteKind.UNMEASURED
    if c.trap is not None:
        return NoteKind.NOT_TAKEN if c.trap == Trap.NOT_TAKEN else NoteKind.CHANGED_NOTHING
    if c.no_effect:
        return NoteKind.NO_EFFECT
    return NoteKind.UNTESTED if _untested(c) else NoteKind.NONE


def _note(c: ConfigReading, run: ConfigRun | None) -> str:
    match note_kind(c, run):
        case NoteKind.FAILED:
            return f"failed ({run.error_kind if run is not None else None})"
        case NoteKind.UNMEASURED:
            # measured but refused (another model, the same process) says why
            refused = missing_text(c) if c.missing == Missing.REFUSED else None
            return refused or (run.status if run is not None else "not measured")
        case NoteKind.NOT_TAKEN | NoteKind.CHANGED_NOTHING:
            return TRAP_NOTE[c.trap] if c.trap is not None else ""
        case NoteKind.NO_EFFECT:
            return NO_EFFECT_NOTE
        case NoteKind.UNTESTED:
            return untested_note(_untested(c))
    return ""


def note(c: ConfigReading, run: ConfigRun | None) -> str:
    """The table's last column: a trap, a failure or why it has no result, and what --stress
    found (plain text)."""
    said = _note(c, run)
    loud = stress_verdict(run)
    if loud is None:
        return said
    return f"{said}; under --stress: {loud}" if said else f"under --stress: {loud}"


__all__ = [
    "NO_EFFECT_NOTE",
    "TRAP_NOTE",
    "NoteKind",
    "note",
    "note_kind",
    "stress_verdict",
    "untested_note",
]
