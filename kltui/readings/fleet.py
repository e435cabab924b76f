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

from dataclasses import replace

from kltui.engines.identity import ServerIdentity
from kltui.readings.compare import compare_books
from kltui.readings.coverage import min_scored, tested
from kltui.readings.fleet_model import (
    DEFAULT_FLEET_REQUIRE,
    FLEET_REQUIRE,
    Aside,
    AsideKind,
    Cell,
    Fleet,
    Group,
    Matrix,
    OddReplica,
    Shortfall,
    earliest,
    shortfalls,
    state_of,
)
from kltui.registry import same_engine
from kltui.session.helper_view import HelperView
from kltui.session.servers import COMPARED
from kltui.session.store import HelperState, SessionStore


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


def _tested(st: HelperState | None) -> bool:
    return st is not None and tested(st)


def _need(x: HelperState, y: HelperState) -> int:
    """The fewest common scored samples that make two replicas' comparison of a helper count."""
    return min_scored(max(HelperView.of(x).samples, HelperView.of(y).samples))


def matrix(store: SessionStore, helper: str, urls: list[str]) -> Matrix:
    """Every replica against every other on `helper` (None on the diagonal and where either
    has no scored sample); symmetric. A cell counts when both replicas tested the helper and
    share at least min_scored(samples) scored samples."""
    n = len(urls)
    out: Matrix = [[None] * n for _ in range(n)]
    states = [state_of(store, helper, u) for u in urls]
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
) -> Aside:
    """Why replicas i and j are not compared on every helper of `on` (both tested them)."""
    for h in on:
        c = mats[h][i][j]
        if c is None or not c.counted:
            x, y = state_of(store, h, urls[i]), state_of(store, h, urls[j])
            need = _need(x, y) if x is not None and y is not None else 1
            common = 0 if c is None else c.comparable_samples
            return Aside(AsideKind.TOO_FEW, helper=h, common=common, need=need, other=urls[j])
    return Aside(AsideKind.NOT_COMPARED, other=urls[j])


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


def _why_alone(
    store: SessionStore, url: str, names: list[str], short: dict[str, Shortfall]
) -> Aside:
    """Why replica `url` was compared with none (its recorded problem, or the shortfalls)."""
    if (p := store.fatal(url)) is not None:
        return Aside(AsideKind.ERRORED, message=p.message)
    ran = [h for h in names if state_of(store, h, url) is not None]
    if not ran:
        return Aside(AsideKind.NOTHING_SCORED)
    if short:
        return Aside(AsideKind.SHORT, short=tuple(short.items()))
    return Aside(AsideKind.NO_OTHER)


def fleet(store: SessionStore) -> Fleet | None:
    """The fleet comparison of a `--router` run (None for any other run)."""
    info = fleet_info(store)
    if info is None:
        return None
    urls = replicas(store)
    n = len(urls)
    names = _helpers(store, urls)
    mats = {h: matrix(store, h, urls) for h in names}
    short = {i: shortfalls(store, u, names) for i, u in enumerate(urls)}
    # a helper no two replicas tested separates nobody: the groups rest on the others
    on = tuple(h for h in names if sum(1 for i in range(n) if h not in short[i]) >= 2)
    counted = {
        i: any(c is not None and c.counted for m in mats.values() for c in m[i]) for i in range(n)
    }
    alone = [i for i in range(n) if n > 1 and not counted[i]]
    full = [i for i in range(n) if i not in alone and not any(h in short[i] for h in on)]
    groups, misfits = groups_of(mats, on, full)
    partial: dict[str, Aside] = {}
    for i in range(n):
        if i in alone:
            continue
        if i in misfits:
            kind, j, k = misfits[i]
            if kind == "few":
                partial[urls[i]] = _too_few(store, urls, mats, on, i, j)
            elif kind == "both":
                partial[urls[i]] = Aside(AsideKind.BOTH, other=urls[j], third=urls[k])
            else:
                partial[urls[i]] = Aside(AsideKind.SPLIT, other=urls[j], third=urls[k])
        elif short[i]:
            partial[urls[i]] = Aside(AsideKind.SHORT, short=tuple(short[i].items()))
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
                        earliest(mats, i, main[0]),
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
    return replace(f, require=require)
