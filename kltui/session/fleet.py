"""The replicas of a fleet run (`kltui check --router`) against each other: cross_server
generalised from a pair to every pair.

Per helper, a replicas x replicas bit-equality matrix (identical, first differing position,
max |delta|); the agreement groups (replicas bit-identical to each other on every helper both
ran); and one summary: "all N replicas bit-identical on every path", or the groups with the
server settings that differ between them, the odd one(s) out and where they first differ.
Pure: it reads a SessionStore, does no I/O, and every view (console, reports, TUI) shows what
it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kltui.engines.identity import ServerIdentity
from kltui.helpers.registry import same_engine
from kltui.session.compare import BookDiff, compare_books
from kltui.session.servers import COMPARED
from kltui.session.store import HelperState, SessionStore, helper_key

# what fails a fleet run (`--fleet-require`, `fleet: {require: ...}`): "gate", each replica's
# helpers as for --server; "identical", also replicas not all bit-identical or not all compared
FLEET_REQUIRE = ("gate", "identical")
DEFAULT_FLEET_REQUIRE = "gate"
ODD_NAMED = 3  # replicas outside the first group that the gate's failure describes one by one

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

    @classmethod
    def of(cls, diff: BookDiff) -> Cell:
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
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of this cell."""
        return {
            "identical": self.identical,
            "first_difference": None if self.first is None else self.first.to_json(),
            "prefill_max_abs_delta": self.prefill_max_abs_delta,
            "decode_max_abs_delta": self.decode_max_abs_delta,
            "comparable_samples": self.comparable_samples,
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
    identical: bool | None  # None: not all compared
    groups: tuple[Group, ...]  # largest first
    uncompared: dict[str, str]  # replica -> why it was compared with none
    settings_differ: dict[str, list]  # setting -> one value per group
    odd: tuple[OddReplica, ...]
    matrices: dict[str, Matrix]  # helper -> replicas x replicas
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
            "identical": self.identical,
            "groups": [g.to_json() for g in self.groups],
            "uncompared": dict(self.uncompared),
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


def matrix(store: SessionStore, helper: str, urls: list[str]) -> Matrix:
    """Every replica against every other on `helper` (None on the diagonal and where either
    has no scored sample); symmetric."""
    n = len(urls)
    out: Matrix = [[None] * n for _ in range(n)]
    states = [_state(store, helper, u) for u in urls]
    for i in range(n):
        for j in range(i + 1, n):
            x, y = states[i], states[j]
            if x is None or y is None:
                continue
            cell = Cell.of(compare_books(x.book, y.book))
            out[i][j] = out[j][i] = cell
    return out


def _agree(mats: dict[str, Matrix], i: int, j: int) -> bool | None:
    """Replicas i and j on every helper: True identical wherever both ran, False once one
    differs, None when no helper was compared."""
    cells = [m[i][j] for m in mats.values()]
    verdicts = [c.identical for c in cells if c is not None and c.identical is not None]
    if False in verdicts:
        return False
    return True if verdicts else None


def groups_of(mats: dict[str, Matrix], n: int) -> tuple[list[list[int]], list[int]]:
    """Agreement groups (lists of replica indices, largest first) and the replicas compared
    with none (they errored or never answered)."""
    groups: list[list[int]] = []
    alone: list[int] = []
    for i in range(n):
        if not any(_agree(mats, i, j) is not None for j in range(n) if j != i) and n > 1:
            alone.append(i)
            continue
        for g in groups:
            if all(_agree(mats, i, j) is not False for j in g) and any(
                _agree(mats, i, j) for j in g
            ):
                g.append(i)
                break
        else:
            groups.append([i])
    groups.sort(key=lambda g: (-len(g), g[0]))
    return groups, alone


def _identity(store: SessionStore, url: str) -> ServerIdentity:
    """What the replica at `url` said about itself (empty when not recorded)."""
    return store.identity(url)


def _settings(store: SessionStore, urls: list[str], groups: list[list[int]]) -> dict[str, list]:
    """The compared settings that separate the groups (no value shared by two groups): one
    value per group. A setting that varies inside a group cannot explain the split."""
    out: dict[str, list] = {}
    for key in COMPARED:
        per_group = [
            list(dict.fromkeys(repr(_identity(store, urls[i]).get(key)) for i in g)) for g in groups
        ]
        values = [v for vals in per_group for v in vals]
        if len(values) == len(set(values)) and all(len(v) == 1 for v in per_group):
            out[key] = [_identity(store, urls[g[0]]).get(key) for g in groups]
    return out


def _earliest(mats: dict[str, Matrix], i: int, j: int) -> FleetDifference | None:
    """Where replicas i and j first differ, over every helper: the earliest position."""
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
        if (c := m[i][j]) is not None and c.identical is False and c.first is not None
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


def fleet(store: SessionStore) -> Fleet | None:
    """The fleet comparison of a `--router` run (None for any other run)."""
    info = fleet_info(store)
    if info is None:
        return None
    urls = replicas(store)
    names = _helpers(store, urls)
    mats = {h: matrix(store, h, urls) for h in names}
    groups, alone = groups_of(mats, len(urls))
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
    identical = None
    if len(groups) > 1:
        identical = False
    elif groups and not alone and len(urls) > 1:
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
        uncompared={urls[i]: _why_alone(store, urls[i], names) for i in alone},
        settings_differ=differ,
        odd=tuple(odd),
        matrices=mats,
    )
    require = store.config.get("fleet_require", DEFAULT_FLEET_REQUIRE)
    require = require if require in FLEET_REQUIRE else DEFAULT_FLEET_REQUIRE
    return replace(
        f,
        summary=summary_line(f),
        require=require,
        failure=not_identical(f) if require == "identical" else None,
    )


def not_identical(f: Fleet) -> str | None:
    """Why the fleet `f` is not proven bit-identical on every compared path (None when it is):
    the groups and where the odd ones first differ, or "inconclusive" for replicas left
    uncompared (a gate does not pass on missing evidence)."""
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
    if f.uncompared:
        named = ", ".join(f"{u} ({why})" for u, why in f.uncompared.items())
        parts.append(f"inconclusive: not compared: {named}")
    elif len(f.replicas) < 2:
        parts.append(f"inconclusive: {len(f.replicas)} replica(s) checked, none to compare")
    elif not parts:
        parts.append("inconclusive: no helper was compared on every replica")
    return "; ".join(parts)


def _why_alone(store: SessionStore, url: str, names: list[str]) -> str:
    for p in store.problems:
        if p.fatal and p.source == url:
            return p.message
    ran = [h for h in names if _state(store, h, url) is not None]
    return "no helper scored a sample on it" if not ran else "no other replica to compare with"


def _members(urls: list[str], shown: int = 3) -> str:
    """A group's replicas: all of them when few, else how many and the first ones."""
    if len(urls) <= shown + 1:
        return f"[{', '.join(urls)}]"
    return f"[{len(urls)} replicas: {', '.join(urls[:shown])}, …]"


def summary_line(f: Fleet) -> str:
    """One line: all replicas bit-identical, or the groups, what differs and where."""
    n = len(f.replicas)
    left = f.uncompared
    tail = f"; not compared: {', '.join(left)}" if left else ""
    if f.identical:
        return f"all {n} replicas bit-identical on every path ({', '.join(f.helpers)})"
    groups = f.groups
    if len(groups) <= 1:
        what = "bit-identical where compared" if groups else "nothing compared"
        return f"{n} replicas: {what}{tail}"
    differ = f.settings_differ
    changed = ", ".join(differ) if differ else "no reported setting"
    parts = []
    for g in groups:
        s = ", ".join(f"{k} {_value(v)}" for k, v in g.settings.items())
        parts.append(_members(list(g.replicas)) + (f" ({s})" if s else ""))
    line = f"{len(groups)} agreement groups among {n} replicas: " + " vs ".join(parts)
    line += f"; settings that differ between groups: {changed}"
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
    largest group (the reference): 'same', 'differs', 'reference' or 'not compared'."""
    urls = f.replicas
    ref = urls.index(f.groups[0].replicas[0]) if f.groups else None
    out: dict[str, dict[str, str]] = {}
    for i, u in enumerate(urls):
        row = {}
        for h, m in f.matrices.items():
            if ref is None:
                row[h] = "not compared"
            elif i == ref:
                ran = any(c is not None and c.identical is not None for c in m[i])
                row[h] = "reference" if ran else "not compared"
            else:
                c = m[i][ref]
                if c is None or c.identical is None:
                    row[h] = "not compared"
                else:
                    row[h] = "same" if c.identical else "differs"
        out[u] = row
    return out
