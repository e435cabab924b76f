"""The replicas of a fleet run (`kltui check --router`) against each other: cross_server
generalised from a pair to every pair.

Per helper, a replicas x replicas bit-equality matrix (identical, first differing position,
max |delta|); the agreement groups; and one summary: "all N replicas bit-identical on every
path", or the groups with the server settings that separate them, the odd one(s) out and where
they first differ. Pure: it reads a SessionStore, does no I/O, and every view (console,
reports, TUI) shows what it returns.

A comparison counts only where it is evidence: a cell counts when both replicas tested that
helper (session.coverage: not errored, not vacuous, at least half its samples scored) and share
at least as many scored samples. The groups rest on the helpers that some pair of replicas
compared that way; a replica missing one of them, or sharing too few samples with a group, is
set aside as "not fully compared" (named, with why) instead of joining on a subset of paths:
that is what keeps the groups transitive and keeps a half-compared replica from voting a healthy
one out. "Identical" needs every replica compared on every helper asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kltui.engines.identity import ServerIdentity
from kltui.readings.compare import BookDiff, compare_books
from kltui.readings.coverage import min_scored, untested
from kltui.registry import same_engine
from kltui.session.helper_view import HelperView
from kltui.session.servers import COMPARED
from kltui.session.store import HelperState, SessionStore, helper_key

# what fails a fleet run (`--fleet-require`, `fleet: {require: ...}`): "gate", each replica's
# helpers as for --server; "identical", also replicas not all bit-identical or not all compared
# on every helper asked
FLEET_REQUIRE = ("gate", "identical")
DEFAULT_FLEET_REQUIRE = "gate"
ODD_NAMED = 3  # replicas outside the first group that the gate's failure describes one by one
SHORT_NAMED = 3  # replicas not fully compared that a summary or failure names with why

SIDES_SHOWN = {
    "ids": "generated token ids differ",
    "prefill": "prefill side",
    "decode": "decode side",
    "both": "prefill and decode side",
    "length": "one side has fewer tokens",
}


@dataclass(frozen=True)
class CellDifference:
    """Where two replicas first differ on one helper."""

    sample: int
    position: int
    side: str

    def to_json(self) -> dict[str, Any]:
        """The JSON form (a matrix cell's first_difference)."""
        return {"sample": self.sample, "position": self.position, "side": self.side}


@dataclass(frozen=True)
class Cell:
    """Replica x against replica y on one helper."""

    identical: bool | None  # None: no sample scored on both
    first: CellDifference | None  # the earliest difference
    prefill_max_abs_delta: float
    decode_max_abs_delta: float
    comparable_samples: int
    # both replicas tested this helper and share at least min_scored(samples) scored samples:
    # only then does the cell take part in the grouping and in "identical"
    counted: bool = False

    @classmethod
    def of(cls, diff: BookDiff, counted: bool = False) -> Cell:
        """The cell of one compared pair."""
        first = diff.first  # a differing sample: its position and side are set
        at = None
        if first is not None and first.first is not None and first.side is not None:
            at = CellDifference(first.sample, first.first, first.side)
        return cls(
            diff.identical,
            at,
            diff.max_abs("prefill"),
            diff.max_abs("decode"),
            diff.comparable,
            counted and diff.identical is not None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of this cell."""
        return {
            "identical": self.identical,
            "first_difference": None if self.first is None else self.first.to_json(),
            "prefill_max_abs_delta": self.prefill_max_abs_delta,
            "decode_max_abs_delta": self.decode_max_abs_delta,
            "comparable_samples": self.comparable_samples,
            "counted": self.counted,
        }


Matrix = list[list[Cell | None]]


@dataclass(frozen=True)
class FleetDifference:
    """Where two replicas first differ over every helper: the earliest position."""

    helper: str
    sample: int
    position: int
    side: str
    prefill_max_abs_delta: float
    decode_max_abs_delta: float

    def to_json(self) -> dict[str, Any]:
        """The JSON form (an odd replica's first_difference)."""
        return {
            "helper": self.helper,
            "sample": self.sample,
            "position": self.position,
            "side": self.side,
            "prefill_max_abs_delta": self.prefill_max_abs_delta,
            "decode_max_abs_delta": self.decode_max_abs_delta,
        }


@dataclass(frozen=True)
class Group:
    """Replicas bit-identical to each other, with the settings that set the group apart."""

    replicas: tuple[str, ...]
    settings: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The JSON form (an entry of fleet.groups)."""
        return {"replicas": list(self.replicas), "settings": dict(self.settings)}


@dataclass(frozen=True)
class OddReplica:
    """A replica outside the largest group: against which replica, what differs and where."""

    replica: str
    group: int  # index into Fleet.groups
    against: str  # the largest group's first replica
    settings: dict[str, tuple[Any, Any]]  # setting -> (the largest group's value, this one's)
    first_difference: FleetDifference | None
    majority: bool  # the largest group is larger than any other: this one is "the odd one"

    def to_json(self) -> dict[str, Any]:
        """The JSON form (an entry of fleet.odd)."""
        return {
            "replica": self.replica,
            "group": self.group,
            "against": self.against,
            "settings": {k: [a, b] for k, (a, b) in self.settings.items()},
            "first_difference": None
            if self.first_difference is None
            else self.first_difference.to_json(),
            "majority": self.majority,
        }


@dataclass(frozen=True)
class Fleet:
    """The fleet comparison of a `--router` run: every replica against every other."""

    router: Any  # as recorded (untrusted)
    workers: list[Any]  # the router's workers as recorded (untrusted dicts)
    replicas: tuple[str, ...]
    helpers: tuple[str, ...]
    identical: bool | None  # None: not all compared on every helper
    groups: tuple[Group, ...]  # largest first
    uncompared: dict[str, str]  # replica -> why it was compared with none
    settings_differ: dict[str, list]  # setting -> one value per group
    odd: tuple[OddReplica, ...]
    matrices: dict[str, Matrix]  # helper -> replicas x replicas
    # the helpers the groups rest on: tested, with enough common samples, by some pair
    grouped_on: tuple[str, ...] = ()
    # replica -> why it was not compared on every helper asked (those outside every group were
    # set aside: they miss a helper the groups rest on, or share too few samples with a group)
    not_fully_compared: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    require: str = DEFAULT_FLEET_REQUIRE
    failure: str | None = None  # why --fleet-require identical failed

    def group_of(self) -> dict[str, int]:
        """Each grouped replica's group index."""
        return {u: gi for gi, g in enumerate(self.groups) for u in g.replicas}

    def to_json(self) -> dict[str, Any]:
        """The JSON result's `fleet` entry (schema kltui/schemas, docs/JSON.md)."""
        return {
            "router": self.router,
            "workers": self.workers,
            "replicas": list(self.replicas),
            "helpers": list(self.helpers),
            "grouped_on": list(self.grouped_on),
            "identical": self.identical,
            "groups": [g.to_json() for g in self.groups],
            "uncompared": dict(self.uncompared),
            "not_fully_compared": dict(self.not_fully_compared),
            "settings_differ": dict(self.settings_differ),
            "odd": [o.to_json() for o in self.odd],
            "matrices": {
                h: [[c.to_dict() if c is not None else None for c in row] for row in m]
                for h, m in self.matrices.items()
            },
            "summary": self.summary,
            "require": self.require,
            "failure": self.failure,
        }


def fleet_info(store: SessionStore) -> dict | None:
    """The fleet record of a `--router` run (router, workers), None for any other run."""
    return store.config.fleet


def replicas(store: SessionStore) -> list[str]:
    """The workers the fleet run checked, in the run's order."""
    info = fleet_info(store) or {}
    tested = [
        w["url"]
        for w in info.get("workers", [])
        if w.get("tested") and isinstance(w.get("url"), str)
    ]
    if tested or store.run is None:
        return tested
    return list(store.config.servers)


def _helpers(store: SessionStore, urls: list[str]) -> list[str]:
    names = [h for h in store.config.helpers if same_engine(h)]
    names += [st.helper for st in store.helpers.values() if st.server in urls]
    return [h for h in dict.fromkeys(names) if same_engine(h)]


def _state(store: SessionStore, helper: str, url: str) -> HelperState | None:
    st = store.helpers.get(helper_key(helper, url))
    return st if st is not None and st.book.samples else None


def _tested(st: HelperState | None) -> bool:
    return st is not None and untested(st) is None


def _need(x: HelperState, y: HelperState) -> int:
    """The fewest common scored samples that make two replicas' comparison of a helper count."""
    return min_scored(max(HelperView.of(x).samples, HelperView.of(y).samples))


def matrix(store: SessionStore, helper: str, urls: list[str]) -> Matrix:
    """Every replica against every other on `helper` (None on the diagonal and where either
    has no scored sample); symmetric. A cell counts when both replicas tested the helper and
    share at least min_scored(samples) scored samples."""
    n = len(urls)
    out: Matrix = [[None] * n for _ in range(n)]
    states = [_state(store, helper, u) for u in urls]
    for i in range(n):
        for j in range(i + 1, n):
            x, y = states[i], states[j]
            if x is None or y is None:
                continue
            diff = compare_books(x.book, y.book)
            enough = _tested(x) and _tested(y) and diff.comparable >= _need(x, y)
            out[i][j] = out[j][i] = Cell.of(diff, enough)
    return out


def _agree(mats: dict[str, Matrix], on: tuple[str, ...], i: int, j: int) -> bool | None:
    """Replicas i and j on the helpers `on`: False once a counted cell differs, True when every
    one of them counted and is identical, None otherwise (not compared on all of them)."""
    cells = [mats[h][i][j] for h in on]
    if any(c is not None and c.counted and c.identical is False for c in cells):
        return False
    if on and all(c is not None and c.counted and c.identical for c in cells):
        return True
    return None


def _too_few(
    store: SessionStore,
    urls: list[str],
    mats: dict[str, Matrix],
    on: tuple[str, ...],
    i: int,
    j: int,
) -> str:
    """Why replicas i and j are not compared on every helper of `on` (both tested them)."""
    for h in on:
        c = mats[h][i][j]
        if c is None or not c.counted:
            x, y = _state(store, h, urls[i]), _state(store, h, urls[j])
            need = _need(x, y) if x is not None and y is not None else 1
            common = 0 if c is None else c.comparable_samples
            return f"{h}: {common} samples in common with {urls[j]} (at least {need} needed)"
    return f"not compared with {urls[j]}"


# why a replica fits no group: ("few", j, -1) it was not compared with j on every helper;
# ("split", j, k) it equals j and differs from k of j's group; ("both", j, k) it equals j and
# k of two groups (which differ on samples it did not share)
Misfit = tuple[str, int, int]


def groups_of(
    mats: dict[str, Matrix], on: tuple[str, ...], members: list[int]
) -> tuple[list[list[int]], dict[int, Misfit]]:
    """Agreement groups over the replicas `members` (lists of replica indices, largest first),
    each a set of replicas compared with each other on every helper of `on` and bit-identical
    there, every two groups differing; and the members that fit no group, with why."""
    groups: list[list[int]] = []
    aside: dict[int, Misfit] = {}
    for i in members:
        verdict = {j: _agree(mats, on, i, j) for g in groups for j in g}
        fits = [g for g in groups if all(verdict[j] is True for j in g)]
        others = [j for g in groups if not fits or g is not fits[0] for j in g]
        if len(fits) == 1 and all(verdict[j] is False for j in others):
            fits[0].append(i)
        elif all(v is False for v in verdict.values()):
            groups.append([i])
        elif (few := next((j for j, v in verdict.items() if v is None), None)) is not None:
            aside[i] = ("few", few, -1)
        elif len(fits) > 1:
            aside[i] = ("both", fits[0][0], fits[1][0])
        else:  # a group it equals in part: equal to some members, not to others
            group = next(g for g in groups if g not in fits and any(verdict[j] for j in g))
            same = next(j for j in group if verdict[j])
            other = next(j for j in group if verdict[j] is False)
            aside[i] = ("split", same, other)
    groups.sort(key=lambda g: (-len(g), g[0]))
    return groups, aside


def _identity(store: SessionStore, url: str) -> ServerIdentity:
    """What the replica at `url` said about itself (empty when not recorded)."""
    return store.identity(url)


def _settings(store: SessionStore, urls: list[str], groups: list[list[int]]) -> dict[str, list]:
    """The compared settings that separate the groups: known on every replica of every group,
    one value within each group and no value shared by two groups; one value per group. A
    setting that varies inside a group, or that a replica does not report, cannot explain the
    split."""
    out: dict[str, list] = {}
    for key in COMPARED:
        values = [[_identity(store, urls[i]).get(key) for i in g] for g in groups]
        if any(v is None for vals in values for v in vals):
            continue
        per_group = [list(dict.fromkeys(repr(v) for v in vals)) for vals in values]
        flat = [v for vals in per_group for v in vals]
        if len(flat) == len(set(flat)) and all(len(v) == 1 for v in per_group):
            out[key] = [vals[0] for vals in values]
    return out


def _earliest(mats: dict[str, Matrix], i: int, j: int) -> FleetDifference | None:
    """Where replicas i and j first differ, over every helper whose cell counts: the earliest
    position."""
    found = [
        FleetDifference(
            name,
            c.first.sample,
            c.first.position,
            c.first.side,
            c.prefill_max_abs_delta,
            c.decode_max_abs_delta,
        )
        for name, m in mats.items()
        if (c := m[i][j]) is not None and c.counted and c.identical is False and c.first is not None
    ]
    return min(found, key=lambda f: (f.position, f.sample)) if found else None


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


def _short(store: SessionStore, url: str, helper: str) -> str | None:
    """Why replica `url` did not test `helper` (None: it did)."""
    st = store.helpers.get(helper_key(helper, url))
    if st is None:
        if (p := store.fatal(url, helper)) is not None:
            return "errored" + (f" (phase {p.phase})" if p.phase else "")
        if store.fatal(url) is not None:
            return "not run: the replica errored before it"
        return "has not run yet" if store.finished is None else "did not run"
    if st.summary is None:
        if (p := store.fatal(url, helper)) is not None or st.phase == "error":
            phase = p.phase if p is not None else None
            return "errored" + (f" (phase {phase})" if phase else "")
        return "still running" if store.finished is None else "did not finish"
    return untested(st)


def _shortfalls(store: SessionStore, url: str, names: list[str]) -> dict[str, str]:
    """Each helper asked that replica `url` did not test, with why."""
    return {h: why for h in names if (why := _short(store, url, h)) is not None}


def _listed(short: dict[str, str]) -> str:
    return "; ".join(f"{h}: {why}" for h, why in short.items())


def fleet(store: SessionStore) -> Fleet | None:
    """The fleet comparison of a `--router` run (None for any other run)."""
    info = fleet_info(store)
    if info is None:
        return None
    urls = replicas(store)
    n = len(urls)
    names = _helpers(store, urls)
    mats = {h: matrix(store, h, urls) for h in names}
    short = {i: _shortfalls(store, u, names) for i, u in enumerate(urls)}
    # a helper no two replicas tested separates nobody: the groups rest on the others
    on = tuple(h for h in names if sum(1 for i in range(n) if h not in short[i]) >= 2)
    counted = {
        i: any(c is not None and c.counted for m in mats.values() for c in m[i]) for i in range(n)
    }
    alone = [i for i in range(n) if n > 1 and not counted[i]]
    full = [i for i in range(n) if i not in alone and not any(h in short[i] for h in on)]
    groups, misfits = groups_of(mats, on, full)
    partial: dict[str, str] = {}
    for i in range(n):
        if i in alone:
            continue
        if i in misfits:
            kind, j, k = misfits[i]
            if kind == "few":
                partial[urls[i]] = _too_few(store, urls, mats, on, i, j)
            elif kind == "both":
                partial[urls[i]] = (
                    f"bit-identical to {urls[j]} and to {urls[k]}, which differ from each "
                    "other on samples it did not share: it fits no group"
                )
            else:
                partial[urls[i]] = (
                    f"bit-identical to {urls[j]} but not to {urls[k]} of the same group, on "
                    "other samples: it fits no group"
                )
        elif short[i]:
            partial[urls[i]] = _listed(short[i])
    differ = _settings(store, urls, groups) if len(groups) > 1 else {}
    odd: list[OddReplica] = []
    if len(groups) > 1:
        main = groups[0]
        lone_majority = len(main) > len(groups[1])
        for gi, g in enumerate(groups[1:], start=1):
            for i in g:
                odd.append(
                    OddReplica(
                        urls[i],
                        gi,
                        urls[main[0]],
                        {k: (v[0], v[gi]) for k, v in differ.items()},
                        _earliest(mats, i, main[0]),
                        lone_majority,
                    )
                )
    found = any(
        c is not None and c.counted and c.identical is False
        for m in mats.values()
        for row in m
        for c in row
    )
    identical = None
    if n > 1 and (len(groups) > 1 or found):
        identical = False  # a counted difference is evidence on its own
    elif n > 1 and len(groups) == 1 and not alone and not partial and on == tuple(names):
        identical = True
    f = Fleet(
        router=info.get("router"),
        workers=info.get("workers", []),
        replicas=tuple(urls),
        helpers=tuple(names),
        identical=identical,
        groups=tuple(
            Group(tuple(urls[i] for i in g), {k: v[gi] for k, v in differ.items()})
            for gi, g in enumerate(groups)
        ),
        uncompared={urls[i]: _why_alone(store, urls[i], names, short[i]) for i in alone},
        settings_differ=differ,
        odd=tuple(odd),
        matrices=mats,
        grouped_on=on,
        not_fully_compared=partial,
    )
    require = store.config.get("fleet_require", DEFAULT_FLEET_REQUIRE)
    require = require if require in FLEET_REQUIRE else DEFAULT_FLEET_REQUIRE
    return replace(
        f,
        summary=summary_line(f),
        require=require,
        failure=not_identical(f) if require == "identical" else None,
    )


def _named(items: dict[str, str], key: str) -> str:
    """`URL (why)` for the first few replicas of `items`, then how many more (in fleet.`key`)."""
    shown = [f"{u} ({why})" for u, why in list(items.items())[:SHORT_NAMED]]
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
            d = _earliest(f.matrices, i, f.replicas.index(v))
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


def _why_alone(store: SessionStore, url: str, names: list[str], short: dict[str, str]) -> str:
    if (p := store.fatal(url)) is not None:
        return p.message
    ran = [h for h in names if _state(store, h, url) is not None]
    if not ran:
        return "no helper scored a sample on it"
    if short:
        return _listed(short)
    return "no other replica to compare with"


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
