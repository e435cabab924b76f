"""Whether two servers can be compared at all, the one place every front end asks: the same
model (`model_check`: a weights hash reported or taken here, else a weight version, else
"unverified"), and not one server process under two URLs (`engines.identity.same_process`).
`kltui check` refuses a pair that fails either before anything is flushed; attach mode of
`kltui ablate` refuses the same pairs, and the ablation reading refuses them again when a sweep
is read back from its recordings, so no front end compares what check would not.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kltui.engines.identity import ServerIdentity, same_process
from kltui.metrics.alignment import model_names

WEIGHT_FILES = "config.json and *.safetensors"


class ModelState(StrEnum):
    """Whether two servers load the same model."""

    SAME = "same"  # verified by a weights hash or a weight version
    DIFFERENT = "different"  # a reported or hashed difference
    UNVERIFIED = "unverified"  # the same name, nothing to check the weights with


@dataclass(frozen=True)
class ModelCheck:
    """Whether two servers load the same model: "same" (verified by a weights hash or a weight
    version), "different" (a reported or hashed difference), or "unverified" (the same name,
    nothing to check the weights with); `why` says which."""

    state: ModelState
    why: str

    @property
    def same(self) -> bool | None:
        """The JSON's `same_model`: True, False, or None for unverified."""
        return {"same": True, "different": False}.get(self.state)

    def to_json(self) -> dict[str, str]:
        """The check as the JSON result writes it (docs/JSON.md `model_check`)."""
        return {"state": self.state, "why": self.why}


def _short(h: object) -> str:
    return f"{str(h)[:12]}…"


def _unverified_why(s: ServerIdentity, label: str) -> str:
    note = s.get("local_weights_note")
    if note is None and s.get("local_weights_sha256") is None:
        note = "not hashed"  # a recording from before kltui hashed weights, or one server
    return f"{label} {s.get('url', '?')}: {note}"


def model_check(a: ServerIdentity, b: ServerIdentity) -> ModelCheck:
    """Same, different or unverified: see ModelCheck. Names compare by their last path
    component, as the cross-engine table does; a different name is another model even when
    the bytes agree (the tokenizer or chat template may differ; --allow-different-models runs
    them). Under one name: a weights hash the servers report, then the hash kltui took of
    both folders here, then a weight version that is not the placeholder."""
    na, nb = model_names(a.get("model_path")), model_names(b.get("model_path"))
    if not (na and nb):  # a served name is an alias: only when a path is missing
        na = model_names(a.get("model_path"), a.get("served_model_name"))
        nb = model_names(b.get("model_path"), b.get("served_model_name"))
    if na and nb and not na & nb:
        return ModelCheck(
            ModelState.DIFFERENT, f"model_path {a.get('model_path')} vs {b.get('model_path')}"
        )
    name = ", ".join(sorted(na & nb)) or "unknown"
    ha, hb = a.get("weights_sha256"), b.get("weights_sha256")
    if ha is not None and hb is not None:
        if ha != hb:
            return ModelCheck(ModelState.DIFFERENT, f"weights_sha256 {_short(ha)} vs {_short(hb)}")
        return ModelCheck(ModelState.SAME, f"weights_sha256 {_short(ha)} reported by both servers")
    la, lb = a.get("local_weights_sha256"), b.get("local_weights_sha256")
    if la is not None and lb is not None:
        if la != lb:
            return ModelCheck(
                ModelState.DIFFERENT,
                f"the {WEIGHT_FILES} differ on this machine (sha256 {_short(la)} vs "
                f"{_short(lb)}) although both folders are named {name}",
            )
        return ModelCheck(
            ModelState.SAME, f"the same {WEIGHT_FILES} on this machine, sha256 {_short(la)}"
        )
    va, vb = a.weight_version, b.weight_version
    if va is not None and vb is not None:
        if va != vb:
            return ModelCheck(ModelState.DIFFERENT, f"weight_version {va} vs {vb}")
        return ModelCheck(ModelState.SAME, f"weight_version {va} reported by both servers")
    if va is not None or vb is not None:
        unsure = f"weight_version {va or vb} on one server only"
    else:
        unsure = "; ".join(
            _unverified_why(s, lab) for s, lab, h in ((a, "A", la), (b, "B", lb)) if h is None
        )
    return ModelCheck(
        ModelState.UNVERIFIED, f"same model name {name}, weights not verified: {unsure}"
    )


def models_differ(a: ServerIdentity, b: ServerIdentity) -> ModelCheck | None:
    """model_check when it says two SGLang servers serve different models, None when nothing
    they report or kltui hashed says so (unverified counts as the same here: only a
    difference refuses)."""
    check = model_check(a, b)
    return check if check.state == ModelState.DIFFERENT else None


class ConflictKind(StrEnum):
    """Why two servers' numbers cannot be compared."""

    SAME_PROCESS = "same server"  # one process under two URLs: agreeing with itself proves nothing
    DIFFERENT_MODEL = "different model"  # another model or other weights: the numbers are moot


@dataclass(frozen=True)
class Conflict:
    """A pair of servers that must not be compared: the kind, both URLs and what shows it."""

    kind: ConflictKind
    a: str
    b: str
    why: str


def conflict(a: ServerIdentity, b: ServerIdentity) -> Conflict | None:
    """The reason `a` and `b` cannot be compared (None: nothing they report says so); the same
    process first, since one server under two URLs also serves one model."""
    if (why := same_process(a, b)) is not None:
        return Conflict(ConflictKind.SAME_PROCESS, a.url or "?", b.url or "?", why)
    if (check := models_differ(a, b)) is not None:
        return Conflict(ConflictKind.DIFFERENT_MODEL, a.url or "?", b.url or "?", check.why)
    return None


def refusal(c: Conflict, fix: str | None = None) -> str:
    """The one-line refusal of a pair, as `kltui check` and `kltui ablate` print it."""
    if c.kind is ConflictKind.SAME_PROCESS:
        return (
            f"{c.a} and {c.b} are the same server ({c.why}): comparing a server with itself "
            f"proves nothing; {fix or 'name each server once'}"
        )
    return f"{c.b} serves another model than {c.a} ({c.why}): their numbers cannot be compared" + (
        f"; {fix}" if fix else ""
    )
