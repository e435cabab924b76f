"""Condition 1 (shape-variant kernels) vs condition 2 (a state bug on one path), per server.

From `background/sglang_kl_consistency_tests.txt`: k3 is exactly zero only when every kernel is
batch-invariant (condition 1) and both paths compute the same function (condition 2). Condition-1
noise shows in every helper; condition-2 divergence shows only in the helper whose path touches
the broken state ("floating-point noise cannot choose a code path").

The classification reads exact zeros first (a helper with no differing token is proof, not a
level), then per-sample evidence, never a ratio of levels: with match bit-identical any cache-hit
divergence above the 1e-9 stray-ulp floor is condition 2; with match noisy, a cache-hit helper
counts as condition 2 only when its own samples are worse than match's on the same prompts
beyond chance and by a real amount (`paired`: a signed-rank test over samples with an effect
size, on at least 11 common samples, calibrated in `calibration`), and is condition 2 *first*
when it is orders of magnitude above a match that passes its gate. The floor applies the same
way in every branch. At temperature > 0 there is no kernel verdict. The server's own
/server_info decides the advice: nothing already on is advised again.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import replace

from kltui.readings.advice import settings_of
from kltui.readings.compare import rerun_equality
from kltui.readings.coverage import NOT_RUN, Untested, coverage_of, page_misses, pool_misses
from kltui.readings.diagnosis_parts import (
    Command,
    CommandKind,
    Headline,
    LimitLine,
    Line,
    NotTested,
    PageNote,
    PoolNote,
    Protocol,
    Recorded,
    Step,
    StepKind,
)
from kltui.readings.diagnosis_paths import Paths, match_exact, match_noisy
from kltui.readings.diagnosis_restore import cold_side, restore_split, restored
from kltui.readings.diagnosis_window import window_split, windowed, within_side
from kltui.readings.evidence import (
    count_of,
    is_exact,
    is_usable,
    nonfinite_of,
    nonfinite_positions,
    path_side,
)
from kltui.readings.findings import Basis, Finding, Kind, PathBasis
from kltui.readings.geometry_evidence import crossings, geometry_of_info, routing_of
from kltui.readings.imported import ImportEvidence, ImportFinding
from kltui.readings.limit import exact_limit
from kltui.readings.path_test import judge
from kltui.readings.verdict import Diagnosis, Verdicts
from kltui.registry import baseline_path, cache_helpers, same_engine
from kltui.registry import helper as registered
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore

__all__ = ["Diagnosis", "Finding", "Kind", "bit_identical", "diagnose", "diagnose_server"]


# --------------------------------------------------------------------------- classification
def _temperature(store: SessionStore) -> float:
    t = store.config.temperature
    return t if t is not None and math.isfinite(t) else 0.0


def _coverage(
    states: dict[str, HelperState], page: int | None = None, new_tokens: int | None = None
) -> tuple[list[Line], dict[str, Untested]]:
    """(the notes on helpers that did not test their path, helper -> why) for every path the
    diagnosis needs: match and each cache-hit helper. Only a tested helper is evidence."""
    notes: list[Line] = []
    why: dict[str, Untested] = {}
    for h in (baseline_path(), *cache_helpers()):
        st = states.get(h)
        if st is None and not _default(h):  # an opt-in path (multiturn) is no missing one
            continue
        reason = NOT_RUN if st is None else coverage_of(st)
        if reason is not None:
            why[h] = reason
            if st is not None:
                notes.append(NotTested(h, reason))
        # why a cache path's samples missed, wherever the misses cost it a test or its gate
        failed = st is not None and st.summary is not None and st.summary.result == "fail"
        if st is not None and (reason is not None or failed):
            if (hint := page_misses(st, page, new_tokens)) is not None:
                notes.append(PageNote(hint))
            if (short := pool_misses(st)) is not None:
                notes.append(PoolNote(short))
    for h, st in states.items():  # a helper the registry gives no role still gets its note
        if h not in why and h not in (baseline_path(), *cache_helpers()):
            reason = coverage_of(st)
            if reason is not None:
                why[h] = reason
                notes.append(NotTested(h, reason))
    return notes, why


def _default(helper: str) -> bool:
    spec = registered(helper)
    return spec is not None and spec.default


def _protocol_lines(states: dict[str, HelperState]) -> list[Line]:
    """Each protocol finding of a helper, as its own line: never read as numerics."""
    out: list[Line] = []
    for st in states.values():
        for f in (st.summary.protocol or []) if st.summary is not None else []:
            out.append(Protocol(f["message"]))
    return out


def _basis(usable: dict[str, HelperState], why: dict[str, Untested]) -> Basis:
    """The helpers a verdict rests on, with their sample counts, and those not tested."""
    tested = tuple(
        PathBasis(h, HelperView.of(st).scored, HelperView.of(st).samples)
        for h, st in usable.items()
    )
    return Basis(tested, dict(why))


def _import_reading(store: SessionStore, server: str) -> Diagnosis | None:
    """An imported file (`kltui import`): its reading as the import computed it (rl/reading.py),
    never a condition: the file records no cache paths or batches. None for a live server the
    import re-scored on (`--server`): its match helper is diagnosed as any run's."""
    mine = [st for st in store.helpers.values() if st.server == server]
    if not any(st.settings.get("source") == "import" for st in mine):
        return None
    for st in store.helpers.values():
        raw = st.summary.raw if st.server == server and st.summary is not None else {}
        found = raw.get("rl", {}).get("reading") if isinstance(raw.get("rl"), dict) else None
        if (f := ImportFinding.from_json(found)) is not None:
            return Diagnosis(
                server=server,
                finding=Finding.IMPORTED,
                condition=None,
                evidence=tuple(ImportEvidence(line, f) for line in f.lines),
                imported=f,
            )
        if isinstance(found, dict) and isinstance(found.get("label"), str):  # recorded as words
            step, cmd = found.get("next_step"), found.get("next_command")
            return Diagnosis(
                server=server,
                finding=Finding.IMPORTED,
                condition=None,
                headline=Headline(text=found["label"]),
                evidence=tuple(Recorded(str(e)) for e in found.get("evidence") or []),
                step=Step(StepKind.RECORDED, text=step) if isinstance(step, str) else None,
                command=Command(CommandKind.RECORDED, server, text=cmd)
                if isinstance(cmd, str)
                else None,
            )
    return Diagnosis(
        server=server, finding=Finding.PENDING, condition=None, headline=Headline(importing=True)
    )


# one reading per server per store state: check's console, its JSON, the reports, the TUI's
# panels and each configuration of an ablation read the same Diagnosis, computed once
_memo: weakref.WeakKeyDictionary[SessionStore, tuple[int, dict[str, Diagnosis]]] = (
    weakref.WeakKeyDictionary()
)


def diagnose_server(store: SessionStore, server: str) -> Diagnosis:
    """Condition 0, 1, 2 (or inconclusive) for one server, with evidence and the next step;
    computed once per store state and shared by every reader (a Diagnosis is never changed)."""
    version, seen = _memo.get(store, (-1, {}))
    if version != store.version:
        seen = {}
        _memo[store] = (store.version, seen)
    if server not in seen:
        seen[server] = _diagnose(store, server)
    return seen[server]


def _diagnose(store: SessionStore, server: str) -> Diagnosis:
    if store.config.get("source") == "import" and (found := _import_reading(store, server)):
        return found
    info = store.identity(server)
    # a helper comparing two engines, not two paths of one, says nothing about 1 vs 2
    states = {
        st.helper: st
        for st in store.helpers.values()
        if st.server == server and same_engine(st.helper)
    }
    settings = settings_of(info)
    notes, why = _coverage(states, info.page_size, store.config.max_new_tokens)
    notes = ([settings] if settings else []) + _protocol_lines(states) + notes
    usable = {h: st for h, st in states.items() if h not in why and is_usable(st)}
    # what the decoding crossed of the model's state geometry, and what routing does (MoE)
    geometry = geometry_of_info(info)
    crossed = crossings(usable.values(), geometry)
    notes += crossed
    greedy = _temperature(store) == 0
    if (routing := routing_of(usable.values(), geometry, greedy)) is not None:
        notes.append(routing)
    basis = replace(_basis(usable, why), uncrossed=tuple(c for c in crossed if not c.crossed))
    one = Verdicts(server, basis)
    if not usable:
        if not any(st.summary is not None for st in states.values()):
            return one(Finding.PENDING, Headline(), notes)
        return one(Finding.NOTHING_TESTED, Headline(), notes, step=Step(StepKind.NOTHING_TESTED))
    evidence: list[Line] = [count_of(st) for st in usable.values()]
    evidence += notes
    temp = _temperature(store)
    if temp > 0:
        return one(
            Finding.SAMPLING,
            Headline(temperature=temp),
            evidence,
            step=Step(StepKind.SAMPLING),
        )
    nonfinite = {h: w for h, st in usable.items() if (w := nonfinite_positions(st))}
    evidence += [nonfinite_of(h, w) for h, w in nonfinite.items()]
    exact = {h: is_exact(st) for h, st in usable.items()}
    if all(exact.values()):
        return _all_exact(store, one, usable, why, tuple(nonfinite), evidence)
    base, cache_names = baseline_path(), cache_helpers()
    match = usable.get(base)
    if match is None:
        dirty = [h for h in usable if not exact[h]]
        return one(
            Finding.BASELINE_NOT_TESTED,
            Headline(helpers=tuple(dirty), base=base, why=why.get(base, NOT_RUN)),
            evidence,
            step=Step(StepKind.BASELINE, helpers=(base, *cache_names)),
        )
    cache = {h: st for h, st in usable.items() if h in cache_names}
    dirty = [h for h, st in cache.items() if not exact[h]]
    # with match exact, the exact cache paths' samples are where shared noise could also fall
    pool = sum(path_side(st).samples for h, st in cache.items() if exact[h])
    # match differing only where its decode reused cached tokens, or only where it passed the
    # model's sliding window: judged on its samples that did neither
    split = None if exact[base] else restore_split(match, pool)
    window = None if exact[base] or split else window_split(match, info, pool)
    # each cache path against match on the same sample ids, in the cache helper's order
    verdicts = [
        judge(
            h,
            path_side(cache[h]),
            cold_side(match, split)
            if split
            else within_side(match, window)
            if window
            else path_side(match, cache[h].book.order),
            pool,
        )
        for h in dirty
    ]
    paths = Paths(store, server, info, match, cache, verdicts, evidence, why, exact, basis)
    if split is not None:
        return restored(paths, split)
    if window is not None:
        return windowed(paths, window)
    return match_exact(paths) if exact[base] else match_noisy(paths)


def _all_exact(
    store: SessionStore,
    one: Verdicts,
    usable: dict[str, HelperState],
    why: dict[str, Untested],
    nonfinite: tuple[str, ...],
    evidence: list[Line],
) -> Diagnosis:
    """Every tested helper bit-identical: conditions 1 and 2 hold where tested."""
    base, cache_names = baseline_path(), cache_helpers()
    # a helper the run did not ask for is named, not held against it; one that was asked
    # and tested nothing is; and condition 2 needs at least one cache path tested
    asked = set(store.config.helpers) or {base, *cache_names}
    blocking = {h: w for h, w in why.items() if h in asked}
    unasked = [h for h in why if h not in asked]
    if not blocking and base in usable and any(h in usable for h in cache_names):
        # bit-identical where compared is no pass: a helper can still fail its gate (too
        # few cache hits) on the samples it did not compare
        fails = [
            (h, st.summary.hit_failure or "see its result")
            for h, st in usable.items()
            if st.summary is not None and st.summary.result == "fail"
        ]
        partial = any(st.skipped for st in usable.values())
        sides = {h: path_side(st).samples for h, st in usable.items()}
        limits = tuple(
            exact_limit(h, n, sum(sides.values()) - n) for h, n in sides.items() if h in cache_names
        )
        figures = Headline(
            others=tuple(unasked), nonfinite=nonfinite, partial=partial, fails=tuple(fails)
        )
        return one(
            Finding.EXACT,
            figures,
            evidence + [LimitLine(lim) for lim in limits],
            condition=0,
            step=Step(StepKind.EXACT_MISSED) if fails else None,
            limits=limits,
        )
    return one(
        Finding.EXACT_WHERE_TESTED,
        Headline(helpers=tuple(usable), nonfinite=nonfinite, match_tested=base in usable),
        evidence,
        step=Step(StepKind.EXACT_WHERE_TESTED),
    )


# Engines that are compared with, never diagnosed: the diagnosis reads SGLang's own helpers
# (match and the cache paths), which a vLLM baseline or the HF reference never runs; a helper
# that scores one of them (hf_reference's vLLM pair) is shown by that helper's own view.
_BASELINE_ENGINES = ("vllm", "hf")


def diagnose(store: SessionStore) -> list[Diagnosis]:
    """One diagnosis per server a helper ran on, in the order they first ran (baselines and
    the reference excepted)."""
    servers = list(dict.fromkeys(st.server for st in store.helpers.values()))
    servers = [s for s in servers if store.identity(s).get("engine") not in _BASELINE_ENGINES]
    return [diagnose_server(store, s) for s in servers]


def bit_identical(prev: SessionStore, cur: SessionStore) -> bool | None:
    """Whether every per-token value of this run equals the previous run's (None: not
    comparable, e.g. different helpers or samples). See `compare.rerun_equality`."""
    return rerun_equality(prev, cur).identical
