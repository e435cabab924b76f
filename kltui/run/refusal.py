"""The words of `readings/identity.py`: what a model check rests on, and the one-line refusal
of a pair of servers that must not be compared. They live in run/ rather than words/ because
the run driver raises the refusal as a UsageError before any front end renders anything, and
run/ sits below words/ (words/identity.py and words/ablation_config.py say them from here).
The refusal is raised typed: a UsageError whose `finding` is the `Refusal` (kind, figures, fix)."""

from __future__ import annotations

from dataclasses import dataclass

from kltui.engines.identity import shown_value
from kltui.errors import UsageError
from kltui.readings.identity import CheckBasis, Conflict, ConflictKind, ModelCheck, ModelState

WEIGHT_FILES = "config.json and *.safetensors"


def _short(h: object) -> str:
    return f"{str(h)[:12]}…"


def _same(c: ModelCheck) -> str:
    match c.basis:
        case CheckBasis.REPORTED_HASH:
            return f"weights_sha256 {_short(c.a)} reported by both servers"
        case CheckBasis.LOCAL_HASH:
            return f"the same {WEIGHT_FILES} on this machine, sha256 {_short(c.a)}"
    return f"weight_version {c.a} reported by both servers"


def _different(c: ModelCheck) -> str:
    match c.basis:
        case CheckBasis.MODEL_PATH:
            return f"model_path {c.a} vs {c.b}"
        case CheckBasis.REPORTED_HASH:
            return f"weights_sha256 {_short(c.a)} vs {_short(c.b)}"
        case CheckBasis.LOCAL_HASH:
            return (
                f"the {WEIGHT_FILES} differ on this machine (sha256 {_short(c.a)} vs "
                f"{_short(c.b)}) although both folders are named {c.name}"
            )
    return f"weight_version {c.a} vs {c.b}"


def check_words(c: ModelCheck) -> str:
    """Why two servers do or do not load the same model (the JSON's `model_check.why`)."""
    if c.state == ModelState.SAME:
        return _same(c)
    if c.state == ModelState.DIFFERENT:
        return _different(c)
    if c.basis == CheckBasis.ONE_VERSION:
        unsure = f"weight_version {c.a} on one server only"
    else:
        unsure = "; ".join(
            f"{u.label} {u.url}: {'not hashed' if u.note is None else u.note}" for u in c.unhashed
        )
    return f"same model name {c.name}, weights not verified: {unsure}"


def conflict_words(c: Conflict) -> str:
    """What shows that two servers must not be compared."""
    if c.kind is ConflictKind.SAME_PROCESS:
        return (
            f"same startup_time {shown_value(c.startup_time)} and port {shown_value(c.port)} "
            "in /server_info"
        )
    return "" if c.check is None else check_words(c.check)


def refusal(c: Conflict, fix: str | None = None) -> str:
    """The one-line refusal of a pair, as `kltui check` and `kltui ablate` print it."""
    why = conflict_words(c)
    if c.kind is ConflictKind.SAME_PROCESS:
        return (
            f"{c.a} and {c.b} are the same server ({why}): comparing a server with itself "
            f"proves nothing; {fix or 'name each server once'}"
        )
    return f"{c.b} serves another model than {c.a} ({why}): their numbers cannot be compared" + (
        f"; {fix}" if fix else ""
    )


@dataclass(frozen=True)
class Refusal:
    """A pair of servers refused before anything is flushed: the conflict (its kind and what
    shows it) and the fix named."""

    conflict: Conflict
    fix: str | None = None


def refused(c: Conflict, fix: str | None = None) -> UsageError:
    """The refusal to raise: a UsageError saying `refusal(c, fix)` in one line, its finding
    the typed `Refusal`."""
    return UsageError(refusal(c, fix), finding=Refusal(c, fix))
