"""Server A against server B in words (`readings/cross_server.py` decides): the pair's reading
in one line, why a helper was not compared, and the JSON `cross_server` entry that carries
both."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kltui.fmt import sci
from kltui.readings.cross_server import (
    Missing,
    MissingKind,
    PairKind,
    PairReading,
    ServerPair,
    Skipped,
    Suspect,
    SuspectKind,
)
from kltui.readings.paired import STRAY_ULP_FLOOR
from kltui.run.refusal import check_words
from kltui.words.coverage import untested_words
from kltui.words.identity import check_json


def _skipped(s: Skipped) -> str:
    if len(s.kinds) == 1:
        kind = s.kinds[0][0]
        shown = f"{kind} (sample {s.sample}: {s.detail})" if s.detail else kind
    else:
        shown = ", ".join(f"{k} x{n}" for k, n in s.kinds)
    if s.count >= s.n_samples:
        return f"every sample skipped: {shown}"
    return f"{s.count} of {s.n_samples} samples skipped: {shown}"


def missing_line(m: Missing) -> str:
    """Why one side of the pair has nothing to compare for a helper."""
    h, lab = m.helper, m.label
    match m.kind:
        case MissingKind.ERRORED_BEFORE:
            return f"{lab} errored before {h}"
        case MissingKind.NOT_RUN_YET:
            return f"{h} has not run on {lab} yet"
        case MissingKind.DID_NOT_RUN:
            return f"{h} did not run on {lab}"
        case MissingKind.ERRORED_IN:
            return f"{lab} errored in {h}" + (f" (phase {m.phase})" if m.phase else "")
        case MissingKind.SKIPPED if m.skipped is not None:
            return f"no scored samples on {lab} ({_skipped(m.skipped)})"
        case MissingKind.SAID:
            return f"no scored samples on {lab} ({(m.reason or '').removeprefix(f'{h} is ')})"
        case MissingKind.STILL_RUNNING:
            return f"{h} is still running on {lab}"
        case MissingKind.DID_NOT_FINISH:
            return f"{h} did not finish on {lab}"
        case MissingKind.NOT_TESTED if m.untested is not None:
            return f"not tested on {lab} ({untested_words(m.untested)})"
        case MissingKind.NO_COMMON:
            return "no sample scored on both servers"
    return f"no scored samples on {lab}"


def uncompared(pair: ServerPair) -> dict[str, str]:
    """Helper -> why it was not compared (both sides' reasons in one line)."""
    return {h: "; ".join(missing_line(m) for m in ms) for h, ms in pair.uncompared.items()}


def _names(names: Iterable[str]) -> str:
    return ", ".join(names)


def _levels(s: Suspect) -> str:
    a, b = s.levels
    return f"avg_kl_div A {sci(a)}, B {sci(b)}"


def _rounding(s: Suspect, verb: str = "differs") -> str:
    """A helper at rounding level on both servers: what it is, and that it is no state bug."""
    return (
        f"{s.helper} {verb} at rounding level (below the {STRAY_ULP_FLOOR:g} floor): not a "
        f"state bug ({_levels(s)}: rounding on that path's shapes)"
    )


def suspect_line(s: Suspect) -> str:
    """What one differing helper points at."""
    a, b = s.levels
    if s.kind == SuspectKind.ROUNDING:
        return _rounding(s)
    if s.kind == SuspectKind.BOTH_DIVERGE:
        return (
            f"{s.helper} differs between the servers and diverges on both (avg_kl_div A "
            f"{a:.3g}, B {b:.3g}): whatever separates the servers changes what that path "
            f"computes on both rather than confining it to one; each server's own diagnosis "
            f"says whether its {s.path} holds a state bug"
        )
    if s.kind == SuspectKind.ONE_SERVER:
        return (
            f"{s.helper} differs (avg_kl_div A {a:.3g}, B {b:.3g}): a state bug on "
            f"{s.server}'s {s.path} (condition 2)"
        )
    return f"{s.helper} differs: a state bug on the {s.path} of one server (condition 2)"


def _identical_line(r: PairReading, changed: str) -> str:
    """Every helper compared and bit-identical: the line for each IDENTICAL_* kind."""
    if r.kind == PairKind.IDENTICAL_EXACT:
        return f"bit-identical across servers (settings that differ: {changed}); every path exact"
    if r.kind == PairKind.IDENTICAL_SAME_SETTINGS:
        return (
            "bit-identical across servers, but they report the same settings: run one with a "
            "setting changed (page size, tp, cuda graph) to separate logic from kernels"
        )
    lead = (
        f"bit-identical across servers although {changed} differ, and "
        f"{', '.join(r.diverging)} still diverge: the divergence is deterministic and does not "
        f"depend on {changed} (not a race, and not that setting)"
    )
    base = r.base
    if r.kind == PairKind.IDENTICAL_KERNEL:
        return (
            f"{lead}; {base} diverges too, so a kernel on the decode path that both "
            "configurations run with the same shapes is the suspect (condition 1): find it "
            "with kltui dumps"
        )
    rounding = "; ".join(_rounding(s, "diverges") for s in r.suspects)
    if r.kind == PairKind.IDENTICAL_ROUNDING:
        return f"{lead}; {base} is exact, so the kernels agree; {rounding}"
    if r.kind == PairKind.IDENTICAL_LOGIC_FAULT:
        return (
            f"{lead}; {base} is exact, so the kernels agree: a deterministic logic fault on "
            "the cache path (condition 2)" + f"; {rounding}" * bool(rounding)
        )
    return f"{lead}; run {base} too, to tell a kernel (condition 1) from a logic fault"


def _differing_line(r: PairReading, changed: str, skipped: str) -> str:
    """Some compared helper differs: the kernels, a cache path, or not told apart."""
    base = r.base
    if r.kind == PairKind.KERNELS:
        others = [h for h in r.differing if h != base]
        also = f"; {_names(others)} differ too, which {base}'s difference can explain" * bool(
            others
        )
        return (
            f"{base} differs between servers (settings that differ: {changed}): the kernels give "
            "other numbers on the two configurations, so kernels or races (batch variance) are "
            f"involved{also}" + skipped
        )
    if r.kind == PairKind.CACHE_PATH:
        caveat = ""
        if r.shapes:
            caveat = (
                f"; but {_names(r.shapes)} restored a different number of cached tokens on "
                f"the two servers and {base} is not exact, so a batch-variant kernel on the "
                "cache-hit path can explain it too"
            )
        parts = "; ".join(suspect_line(s) for s in r.suspects)
        return (
            f"{base} is bit-identical across servers, so their kernels agree; {parts}{caveat}"
            + (skipped)
        )
    return (
        f"{_names(r.differing)} differ between servers, but {base} was not compared, so "
        f"kernels cannot be told from cache state: run {base} on both" + skipped
    )


def _pattern_line(r: PairReading) -> str:
    changed = ", ".join(r.changed) if r.changed else "no reported setting"
    left = _names(r.uncompared)
    skipped = f"; not compared: {left}" if r.uncompared else ""
    if r.kind == PairKind.DIFFERENT_MODELS and r.models is not None:
        what = (
            "bit-identical, so the weights may be the same under two names"
            if r.identical
            else "a difference says nothing about kernels or cache state"
        )
        return (
            f"different models ({check_words(r.models)}), compared because --allow-different-models was "
            f"given: {what}" + skipped
        )
    if r.kind == PairKind.NOTHING_COMPARED:
        return f"nothing compared: no helper has a sample scored on both servers ({left})"
    if r.kind == PairKind.PARTLY_IDENTICAL:
        return (
            f"bit-identical on {_names(r.compared)} only (settings that differ: "
            f"{changed}); not compared: {left}, so nothing is said about "
            + ("its path" if len(r.uncompared) == 1 else "their paths")
        )
    if r.kind in (PairKind.KERNELS, PairKind.CACHE_PATH, PairKind.BASELINE_NOT_COMPARED):
        return _differing_line(r, changed, skipped)
    return _identical_line(r, changed)


def reading_line(pair: ServerPair | PairReading) -> str:
    """What the pattern of differences between the two servers means, in one line."""
    r = pair.reading if isinstance(pair, ServerPair) else pair
    line = _pattern_line(r)
    if r.unverified is not None:
        line = f"{line}; {check_words(r.unverified)}: this reading holds only if they are the same"
    return line


def pair_json(pair: ServerPair) -> dict[str, Any]:
    """The pair as the JSON result's `cross_server` entry (docs/JSON.md)."""
    return {
        "servers": list(pair.servers),
        "identical": pair.identical,
        "same_model": pair.same_model,
        "model_check": check_json(pair.model_check) if pair.model_check else None,
        "settings_differ": {k: list(v) for k, v in pair.settings_differ.items()},
        "uncompared": uncompared(pair),
        "helpers": {h: c.to_json() for h, c in pair.helpers.items()},
        "reading": reading_line(pair),
    }
