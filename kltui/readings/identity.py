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


class ModelState(StrEnum):
    """Whether two servers load the same model."""

    SAME = "same"  # verified by a weights hash or a weight version
    DIFFERENT = "different"  # a reported or hashed difference
    UNVERIFIED = "unverified"  # the same name, nothing to check the weights with


class CheckBasis(StrEnum):
    """What a model check rests on."""

    MODEL_PATH = "model_path"  # the model names differ (`a`, `b`: the paths)
    REPORTED_HASH = "weights_sha256"  # the hashes both servers report (`a`, `b`)
    LOCAL_HASH = "local_weights_sha256"  # the hashes kltui took of both folders here
    WEIGHT_VERSION = "weight_version"  # the weight versions both servers report
    ONE_VERSION = "one weight_version"  # unverified: one server reports a version (`a`)
    NOTHING = "nothing"  # unverified: no hash, no version (`unhashed` says why per server)


@dataclass(frozen=True)
class Unhashed:
    """A server whose weights kltui did not hash: its label (A, B), URL and the recorded note
    (None: not hashed at all, a recording from before kltui hashed weights, or one server)."""

    label: str
    url: object
    note: object = None


@dataclass(frozen=True)
class ModelCheck:
    """Whether two servers load the same model: "same" (verified by a weights hash or a weight
    version), "different" (a reported or hashed difference), or "unverified" (the same name,
    nothing to check the weights with); `basis` says on what, with the values compared
    (`words/identity.check_words` says it)."""

    state: ModelState
    basis: CheckBasis
    a: object = None  # server A's value (path, hash or version)
    b: object = None  # server B's
    name: str = "unknown"  # the model name both share
    unhashed: tuple[Unhashed, ...] = ()

    @property
    def same(self) -> bool | None:
        """The JSON's `same_model`: True, False, or None for unverified."""
        return {"same": True, "different": False}.get(self.state)


def _unhashed(s: ServerIdentity, label: str) -> Unhashed:
    return Unhashed(label, s.get("url", "?"), s.get("local_weights_note"))


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
        pa, pb = a.get("model_path"), b.get("model_path")
        return ModelCheck(ModelState.DIFFERENT, CheckBasis.MODEL_PATH, pa, pb)
    name = ", ".join(sorted(na & nb)) or "unknown"
    for basis, (x, y) in (
        (CheckBasis.REPORTED_HASH, (a.get("weights_sha256"), b.get("weights_sha256"))),
        (CheckBasis.LOCAL_HASH, (a.get("local_weights_sha256"), b.get("local_weights_sha256"))),
        (CheckBasis.WEIGHT_VERSION, (a.weight_version, b.weight_version)),
    ):
        if x is not None and y is not None:
            state = ModelState.SAME if x == y else ModelState.DIFFERENT
            return ModelCheck(state, basis, x, y, name)
    va, vb = a.weight_version, b.weight_version
    if va is not None or vb is not None:
        return ModelCheck(ModelState.UNVERIFIED, CheckBasis.ONE_VERSION, va or vb, name=name)
    la, lb = a.get("local_weights_sha256"), b.get("local_weights_sha256")
    unhashed = tuple(_unhashed(s, lab) for s, lab, h in ((a, "A", la), (b, "B", lb)) if h is None)
    return ModelCheck(ModelState.UNVERIFIED, CheckBasis.NOTHING, name=name, unhashed=unhashed)


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
    """A pair of servers that must not be compared: the kind, both URLs and what shows it
    (SAME_PROCESS: the startup_time and port both report; DIFFERENT_MODEL: the model check).
    `run/refusal.py` says it."""

    kind: ConflictKind
    a: str
    b: str
    startup_time: object = None
    port: object = None
    check: ModelCheck | None = None


def conflict(a: ServerIdentity, b: ServerIdentity) -> Conflict | None:
    """The reason `a` and `b` cannot be compared (None: nothing they report says so); the same
    process first, since one server under two URLs also serves one model."""
    ua, ub = a.url or "?", b.url or "?"
    if same_process(a, b) is not None:
        t, port = a.get("startup_time"), a.get("port")
        return Conflict(ConflictKind.SAME_PROCESS, ua, ub, startup_time=t, port=port)
    if (check := models_differ(a, b)) is not None:
        return Conflict(ConflictKind.DIFFERENT_MODEL, ua, ub, check=check)
    return None
