"""The words of a fleet's reading (`readings/fleet.py` decides): its summary line, why the
replicas are not identical, each replica's cells, a difference and a setting described, and
the JSON `fleet` entry with them."""

from __future__ import annotations

from typing import Any

from kltui.readings.fleet_model import (
    ODD_NAMED,
    SHORT_NAMED,
    SIDES_SHOWN,
    Aside,
    AsideKind,
    Fleet,
    FleetDifference,
    OddReplica,
    Shortfall,
    ShortKind,
    earliest,
)
from kltui.words.coverage import untested_words


def shortfall_words(s: Shortfall) -> str:
    """Why one replica did not test one helper ("errored (phase decode)")."""
    match s.kind:
        case ShortKind.ERRORED:
            return "errored" + (f" (phase {s.phase})" if s.phase else "")
        case ShortKind.AFTER_ERROR:
            return "not run: the replica errored before it"
        case ShortKind.NOT_TESTED if s.untested is not None:
            return untested_words(s.untested)
    return str(s.kind)  # the kind's own words


def aside_words(a: Aside) -> str:
    """Why a replica stands outside the comparison (an entry of the JSON's `uncompared` or
    `not_fully_compared`)."""
    match a.kind:
        case AsideKind.ERRORED:
            return a.message
        case AsideKind.NOTHING_SCORED:
            return "no helper scored a sample on it"
        case AsideKind.NO_OTHER:
            return "no other replica to compare with"
        case AsideKind.SHORT:
            return "; ".join(f"{h}: {shortfall_words(s)}" for h, s in a.short)
        case AsideKind.TOO_FEW:
            return (
                f"{a.helper}: {a.common} samples in common with {a.other} (at least {a.need} "
                "needed)"
            )
        case AsideKind.NOT_COMPARED:
            return f"not compared with {a.other}"
        case AsideKind.BOTH:
            return (
                f"bit-identical to {a.other} and to {a.third}, which differ from each other on "
                "samples it did not share: it fits no group"
            )
    return (
        f"bit-identical to {a.other} but not to {a.third} of the same group, on other "
        "samples: it fits no group"
    )


def asides(items: dict[str, Aside]) -> dict[str, str]:
    """Replica -> why, in words (`Fleet.uncompared`, `Fleet.not_fully_compared`)."""
    return {u: aside_words(a) for u, a in items.items()}


def describe_difference(d: FleetDifference) -> str:
    """'match sample 0 @ 3 (decode side; max |Δ| prefill 0, decode 1.2e-07)'."""
    side = SIDES_SHOWN.get(d.side, d.side)
    where = f"{d.helper} sample {d.sample} @ {d.position}"
    if d.side in ("ids", "length"):  # values past a different token are not compared
        return f"{where} ({side})"
    return (
        f"{where} ({side}; max |Δ| prefill {d.prefill_max_abs_delta:.3g}, decode "
        f"{d.decode_max_abs_delta:.3g})"
    )


def setting_contrast(o: OddReplica) -> str:
    """The settings an odd replica reports otherwise, its own value first ("page_size 4 here, 1
    in the largest group"); empty when no reported setting differs."""
    there = "in the largest group" if o.majority else f"on {o.against}"
    return ", ".join(
        f"{k} {_value(mine)} here, {_value(theirs)} {there}"
        for k, (theirs, mine) in o.settings.items()
    )


def _value(v: object) -> str:
    if isinstance(v, list):
        return "/".join(_value(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return "–" if v is None else str(v)


def _named(items: dict[str, Aside], key: str) -> str:
    """`URL (why)` for the first few replicas of `items`, then how many more (in fleet.`key`)."""
    shown = [f"{u} ({aside_words(why)})" for u, why in list(items.items())[:SHORT_NAMED]]
    if len(items) > SHORT_NAMED:
        shown.append(f"+ {len(items) - SHORT_NAMED} more (fleet.{key})")
    return ", ".join(shown)


def _differing_partial(f: Fleet) -> tuple[str, str, FleetDifference] | None:
    """A replica set aside that still differs, on a counted cell, from a grouped one."""
    grouped = [u for g in f.groups for u in g.replicas]
    for u in f.not_fully_compared:
        if u in grouped:
            continue
        i = f.replicas.index(u)
        for v in grouped:
            d = earliest(f.matrices, i, f.replicas.index(v))
            if d is not None:
                return u, v, d
    return None


def not_identical(f: Fleet) -> str | None:
    """Why the fleet `f` is not proven bit-identical on every path (None when it is): the
    groups and where the odd ones first differ, or "inconclusive" for replicas left uncompared
    or not compared on every helper (a gate does not pass on missing evidence)."""
    if f.identical:
        return None
    parts = []
    if len(f.groups) > 1:
        diffs = [f"replicas differ: {len(f.groups)} groups"]
        for o in f.odd[:ODD_NAMED]:
            at = describe_difference(o.first_difference) if o.first_difference else "?"
            who = f"odd one out {o.replica}" if o.majority else o.replica
            diffs.append(f"{who}, first difference from {o.against} at {at}")
        if len(f.odd) > ODD_NAMED:  # a CI message stays one readable line at 40 replicas
            diffs.append(f"+ {len(f.odd) - ODD_NAMED} more outside group 1 (fleet.odd)")
        parts.append("; ".join(diffs))
    elif (d := _differing_partial(f)) is not None:
        u, v, where = d
        parts.append(f"replicas differ: {u} first differs from {v} at {describe_difference(where)}")
    if f.uncompared:
        parts.append(f"inconclusive: not compared: {_named(f.uncompared, 'uncompared')}")
    if f.not_fully_compared:
        named = _named(f.not_fully_compared, "not_fully_compared")
        parts.append(f"inconclusive: not compared on every path: {named}")
    if not parts and len(f.replicas) < 2:
        parts.append(f"inconclusive: {len(f.replicas)} replica(s) checked, none to compare")
    elif not parts:
        parts.append("inconclusive: no helper was compared on every replica")
    return "; ".join(parts)


def _members(urls: list[str], shown: int = 3) -> str:
    """A group's replicas: all of them when few, else how many and the first ones."""
    if len(urls) <= shown + 1:
        return f"[{', '.join(urls)}]"
    return f"[{len(urls)} replicas: {', '.join(urls[:shown])}, …]"


def _paths(f: Fleet) -> str:
    """The helpers the groups rest on: 'every path (...)' or the ones compared."""
    if f.grouped_on == f.helpers:
        return f"every path ({', '.join(f.helpers)})"
    return ", ".join(f.grouped_on) + " only" if f.grouped_on else "no path"


def summary_line(f: Fleet) -> str:
    """One line: all replicas bit-identical, or the groups, what separates them and where
    they differ; replicas not (fully) compared named with why."""
    n = len(f.replicas)
    tail = ""
    if f.uncompared:
        tail += f"; not compared: {', '.join(f.uncompared)}"
    if f.not_fully_compared:
        tail += f"; not fully compared: {_named(f.not_fully_compared, 'not_fully_compared')}"
    if f.identical:
        return f"all {n} replicas bit-identical on every path ({', '.join(f.helpers)})"
    groups = f.groups
    if n < 2:
        return f"{n} replica checked: none to compare it with{tail}"
    if len(groups) <= 1:
        if not groups:
            return f"{n} replicas: nothing compared{tail}"
        (g,) = groups
        what = f"{_members(list(g.replicas))} bit-identical on {_paths(f)}"
        if (d := _differing_partial(f)) is not None:
            u, v, where = d
            what += f"; {u} first differs from {v} at {describe_difference(where)}"
        return f"{n} replicas: {what}{tail}"
    differ = f.settings_differ
    parts = []
    for g in groups:
        s = ", ".join(f"{k} {_value(v)}" for k, v in g.settings.items())
        parts.append(_members(list(g.replicas)) + (f" ({s})" if s else ""))
    on = "" if f.grouped_on == f.helpers else f" (compared on {_paths(f)})"
    line = f"{len(groups)} agreement groups among {n} replicas{on}: " + " vs ".join(parts)
    if not differ:
        line += "; no reported setting explains it"
    else:
        line += f"; settings that differ between groups: {', '.join(differ)}"
        if all(len(g.replicas) == 1 for g in groups):
            # one replica per group: everything about a replica differs with it, reported or not
            line += (
                " (one replica per group: anything that differs between the replicas coincides "
                "with the split, so it is not shown to explain it)"
            )
    for o in f.odd:
        at = describe_difference(o.first_difference) if o.first_difference else "?"
        if not o.majority:  # no group is larger: none is "the odd one", each still differs
            line += f"; {o.replica} first differs from {o.against} at {at}"
            continue
        why = setting_contrast(o)
        line += f"; odd one out: {o.replica}" + (f" ({why})" if why else "")
        line += f", first differs from {o.against} at {at}"
    return line + tail


def replica_cells(f: Fleet) -> dict[str, dict[str, str]]:
    """Per replica and helper, the verdict a fleet view shows against the first replica of the
    largest group (the reference): 'same', 'differs', 'reference' or 'not compared' (also where
    the comparison does not count: a helper either replica did not test, or too few samples in
    common)."""
    urls = f.replicas
    ref = urls.index(f.groups[0].replicas[0]) if f.groups else None
    out: dict[str, dict[str, str]] = {}
    for i, u in enumerate(urls):
        row = {}
        for h, m in f.matrices.items():
            if ref is None:
                row[h] = "not compared"
            elif i == ref:
                ran = any(c is not None and c.counted for c in m[i])
                row[h] = "reference" if ran else "not compared"
            else:
                c = m[i][ref]
                if c is None or not c.counted:
                    row[h] = "not compared"
                else:
                    row[h] = "same" if c.identical else "differs"
        out[u] = row
    return out


def odd_replica_failure(o: OddReplica, groups: int) -> str:
    """Why a replica outside the largest of `groups` agreement groups fails its JUnit case."""
    why = setting_contrast(o)
    at = describe_difference(o.first_difference) if o.first_difference else "?"
    lead = "" if o.majority else "no majority group; "
    return (
        f"{lead}not bit-identical to {o.against} (group {o.group + 1} of {groups}"
        + (f"; settings: {why}" if why else "; no reported setting explains it")
        + f"); first difference at {at}"
    )


def failure_line(f: Fleet) -> str | None:
    """Why --fleet-require identical failed (None: it did not, or was not asked)."""
    return not_identical(f) if f.require == "identical" else None


def fleet_json(f: Fleet) -> dict[str, Any]:
    """The JSON result's `fleet` entry (schema kltui/schemas, docs/JSON.md)."""
    return {
        "router": f.router,
        "workers": f.workers,
        "replicas": list(f.replicas),
        "helpers": list(f.helpers),
        "grouped_on": list(f.grouped_on),
        "identical": f.identical,
        "groups": [g.to_json() for g in f.groups],
        "uncompared": asides(f.uncompared),
        "uncompared_kind": {u: a.kind for u, a in f.uncompared.items()},
        "not_fully_compared": asides(f.not_fully_compared),
        "not_fully_compared_kind": {u: a.kind for u, a in f.not_fully_compared.items()},
        "settings_differ": dict(f.settings_differ),
        "odd": [o.to_json() for o in f.odd],
        "matrices": {
            h: [[c.to_dict() if c is not None else None for c in row] for row in m]
            for h, m in f.matrices.items()
        },
        "summary": summary_line(f),
        "require": f.require,
        "failure": failure_line(f),
    }
