"""The diagnosis once match and the cache paths were compared (`diagnosis.py` gets here when
match tested its path and something differs): with match exact, a cache path that differs is
condition 2 when shared noise could not have missed every other path (`match_exact`); with
match noisy, a cache path is condition 2 only beyond match's noise on the same prompts
(`match_noisy`). Decisions only: the words come from `diagnosis_words.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kltui.engines.identity import ServerIdentity
from kltui.readings import diagnosis_words as words
from kltui.readings.advice import (
    CONDITION2_STEP,
    condition1_advice,
    cross_check_command,
    kernel_suspects,
    rerun_command,
    state_suspects,
)
from kltui.readings.evidence import (
    MIN_COMMON,
    PRIMARY_RATIO,
    STRAY_ULP_FLOOR,
    Paired,
    affected_in_common,
    is_exact,
    level_of,
    path_side,
    shape_lines,
)
from kltui.readings.findings import Basis, Finding
from kltui.readings.limit import noisy_limit
from kltui.readings.paired import far_samples
from kltui.readings.path_test import (
    FEW,
    NOISE,
    STATE,
    STRAY,
    SUSPECT,
    UNCLEAR,
    PathVerdict,
)
from kltui.readings.verdict import Diagnosis, Verdicts
from kltui.registry import baseline_path, cache_helpers
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore


@dataclass
class Paths:
    """What both branches read: the server, match, the tested cache paths, each dirty cache
    path's verdict against match, the evidence so far, and the helpers not tested."""

    store: SessionStore
    server: str
    info: ServerIdentity
    match: HelperState
    cache: dict[str, HelperState]
    verdicts: list[PathVerdict]
    evidence: list[str]
    why: dict[str, str]
    exact: dict[str, bool]
    given: Basis  # the tested helpers with their sample counts, in the store's order

    def of(self, kind: str) -> list[PathVerdict]:
        """The cache paths whose verdict is `kind`."""
        return [v for v in self.verdicts if v.kind == kind]

    def failing(self) -> list[str]:
        """Tested helpers that fail their gate."""
        return [
            h
            for h, st in (*self.cache.items(), (baseline_path(), self.match))
            if st.summary is not None and st.summary.result == "fail"
        ]

    def uncovered(self) -> list[str]:
        """Helpers that ran but tested nothing (vacuous, errored, too few scored): each fails
        the run as surely as a gate does, whatever the tested helpers read."""
        return [h for h, w in self.why.items() if w != "did not run"]

    def rested(self) -> Basis:
        """What the verdict rests on: the tested helpers' samples (`given`), each compared
        cache path with its verdict, the p-value it decided on and its samples far above
        match."""
        tested = []
        for t in self.given.tested:
            v = next((v for v in self.verdicts if v.helper == t.helper), None)
            if v is None:
                tested.append(replace(t, verdict="exact" if self.exact.get(t.helper) else None))
                continue
            e, st = v.paired, self.cache[t.helper]
            p = v.p if v.p is not None else (e.p if e is not None else None)
            affected = _affected_ids(st, e) if e is not None else ()
            tested.append(replace(t, verdict=v.kind, p=p, affected=affected))
        return Basis(tuple(tested), dict(self.given.untested))

    def verdicts_of(self) -> Verdicts:
        """The builder of this server's Diagnosis, on this basis."""
        return Verdicts(self.server, self.rested())


def _affected_ids(st: HelperState, e: Paired) -> tuple[int, ...]:
    """The sample ids of the paired test's affected positions (in the helper's order)."""
    order = st.book.order
    return tuple(order[i] for i in e.affected if i < len(order))


# --------------------------------------------------------------------------- match exact
def match_exact(c: Paths) -> Diagnosis:
    """Kernels agree on match's shapes; a divergence only a cache path shows is state, when it
    is above the floor and more than noise shared by every path could put on one path alone."""
    one = c.verdicts_of()
    stray, unclear, state = c.of(STRAY), c.of(UNCLEAR), c.of(STATE)
    clean = [(h, path_side(st).samples) for h, st in c.cache.items() if is_exact(st)]
    others = words.exact_others(path_side(c.match).samples, clean)
    c.evidence += [words.stray_line(v.helper) for v in stray]
    for v in (*state, *unclear):
        c.evidence.append(words.one_path_line(v.helper, path_side(c.cache[v.helper]), others, v.p))
    if state:
        names = [v.helper for v in state]
        primary = next(h for h in cache_helpers() if h in names)  # prefill-written KV first
        c.evidence += [x for h in names for x in shape_lines(c.cache[h], c.info.page_size)]
        return one(
            Finding.STATE_BUG,
            words.state_bug(names, primary, one.basis),
            c.evidence,
            condition=2,
            conditions=(2,),
            suspects=state_suspects(names, c.info),
            next_step=CONDITION2_STEP,
            next_command=cross_check_command(c.server, names),
        )
    if unclear:
        names = [v.helper for v in unclear]
        c.evidence += [x for h in names for x in shape_lines(c.cache[h], c.info.page_size)]
        return one(
            Finding.STATE_UNCLEAR,
            words.state_unclear(names, min(v.p or 1 for v in unclear), one.basis),
            c.evidence,
            suspects=state_suspects(names, c.info),
            next_step=words.STATE_UNCLEAR_STEP,
            next_command=rerun_command(c.server, 128),
        )
    below = [v.helper for v in stray]
    step, cmd, action = condition1_advice(
        c.server, c.info, c.cache[below[0]], c.failing(), c.uncovered()
    )
    return one(
        Finding.STRAY_ULPS,
        words.stray_ulps(below, level_of(c.cache[below[0]]), one.basis),
        c.evidence,
        condition=1,
        conditions=(1,),
        next_step=step,
        next_command=cmd,
        action=action,
    )


# --------------------------------------------------------------------------- match noisy
def _paired_of(c: Paths, kind: str) -> list[Paired]:
    return [v.paired for v in c.of(kind) if v.paired is not None]


def _affected_line(st: HelperState, e: Paired) -> str:
    """The samples far above match, and what they share that the others do not."""
    s = HelperView.of(st).summary
    rows = {p.get("index"): p for p in s.per_sample if isinstance(p, dict)}
    ids = list(_affected_ids(st, e))
    return words.affected_line(st.helper, ids, rows, affected_in_common(st, ids, rows))


@dataclass(frozen=True)
class Far:
    """A cache path's samples orders of magnitude above match on the same prompt and above
    anything match reaches on any prompt (`up`, sample ids, with the highest of their means),
    and how many sit as far below match on the same prompt."""

    helper: str
    up: tuple[int, ...]
    down: int
    top: float
    n: int
    direct: bool  # match at rounding level everywhere and every `up` beyond DIRECT_LEVEL


def far_of(c: Paths, helper: str) -> Far:
    """Where `helper` sits orders of magnitude above match, sample by sample (`far_samples`),
    direct evidence only on a server whose match differs on most samples (rounding noise that
    shows everywhere, not a deterministic path that happened to differ)."""
    st = c.cache[helper]
    side, ms = path_side(st), path_side(c.match, st.book.order)
    far = far_samples(side.means, ms.means)
    ids = tuple(st.book.order[i] for i in far.up)
    msides = path_side(c.match)
    # match at rounding level on every sample it scored, not only those the path shares
    rounding = bool(np.all(msides.means[np.isfinite(msides.means)] <= STRAY_ULP_FLOOR))
    dense = msides.differing_samples * 2 >= max(msides.samples, 1)
    direct = bool(ids) and far.down == 0 and far.beyond_rounding and rounding and dense
    n = int(np.count_nonzero(np.isfinite(side.means) & np.isfinite(ms.means)))
    return Far(helper, ids, far.down, far.top, n, direct)


def match_noisy(c: Paths) -> Diagnosis:
    """Match diverges: condition 1 on this server. Does a cache path add a state bug on top?"""
    excess = [v.paired for v in c.verdicts if v.paired is not None]
    c.evidence += [e.line() for e in excess]
    for v in c.of(NOISE):
        if v.paired is not None and v.paired.beyond_chance:
            c.evidence.append(words.noise_line(v.paired))
    suspect = _paired_of(c, SUSPECT)
    c.evidence += [_affected_line(c.cache[e.helper], e) for e in suspect]
    if state := _paired_of(c, STATE):
        return _state_beyond_noise(c, state)
    dirty = [h for h in c.cache if not c.exact[h]]
    fars = [far_of(c, h) for h in dirty]
    if direct := [f for f in fars if f.direct]:
        return _direct(c, direct[0])
    if suspect:
        return _suspected(c, suspect)
    if few := _paired_of(c, FEW):
        return _too_few_common(c, few)
    if far := [f for f in fars if f.up and f.down == 0]:
        return _far_above(c, far[0])
    return _condition1(c, excess)


def _direct(c: Paths, f: Far) -> Diagnosis:
    """Match at rounding level on every sample and a cache path orders of magnitude above it
    on some prompts, none the other way: rounding cannot give that, whatever the others do."""
    one = c.verdicts_of()
    c.evidence += shape_lines(c.cache[f.helper], c.info.page_size)
    return one(
        Finding.DIRECT_STATE,
        words.direct_state(f.helper, f.up, f.top, level_of(c.match), one.basis),
        c.evidence,
        condition=2,
        conditions=(1, 2),
        suspects=state_suspects([f.helper], c.info),
        next_step=CONDITION2_STEP,
        next_command=cross_check_command(c.server, [f.helper]),
    )


def _far_above(c: Paths, f: Far) -> Diagnosis:
    """Samples orders of magnitude above match with none the other way, short of evidence:
    named, never read as kernel noise, never sent to the kernels' dumps."""
    one = c.verdicts_of()
    c.evidence += shape_lines(c.cache[f.helper], c.info.page_size)
    samples = 4 * max(f.n, 32)
    return one(
        Finding.FAR_ABOVE,
        words.far_above(f.helper, f.up, f.n, level_of(c.match), one.basis),
        c.evidence,
        conditions=(1,),
        suspects=state_suspects([f.helper], c.info),
        next_step=words.not_excluded_step(samples),
        next_command=rerun_command(c.server, samples),
    )


def _advice(c: Paths) -> tuple[str, str | None, str | None]:
    return condition1_advice(c.server, c.info, c.match, c.failing(), c.uncovered())


def _state_beyond_noise(c: Paths, state: list[Paired]) -> Diagnosis:
    """A cache path beyond match's noise on the same prompts: condition 2 on top of 1, and
    first when it is orders of magnitude above a match within its gate."""
    one = c.verdicts_of()
    names = [e.helper for e in state]
    for e in state:
        if e.affected and e.up < e.n:
            c.evidence.append(_affected_line(c.cache[e.helper], e))
    c.evidence += [x for h in names for x in shape_lines(c.cache[h], c.info.page_size)]
    mlevel = level_of(c.match)
    top = max(state, key=lambda e: e.level)
    suspects = kernel_suspects(c.info, c.store)
    gate_ok = c.match.summary is not None and c.match.summary.result == "pass"
    if gate_ok and top.level >= PRIMARY_RATIO * max(mlevel, STRAY_ULP_FLOOR):
        return one(
            Finding.STATE_BUG_FIRST,
            words.state_bug_first(names, top.level, mlevel, one.basis),
            c.evidence,
            condition=2,
            conditions=(1, 2),
            suspects=state_suspects(names, c.info) + suspects,
            next_step=CONDITION2_STEP,
            next_command=cross_check_command(c.server, names),
        )
    step, cmd, action = _advice(c)
    return one(
        Finding.BOTH,
        words.both(names, mlevel, one.basis),
        c.evidence,
        condition=1,
        conditions=(1, 2),
        suspects=suspects + state_suspects(names, c.info),
        next_step=step,
        next_command=cmd,
        action=action,
    )


def _suspected(c: Paths, suspect: list[Paired]) -> Diagnosis:
    """Above match but short of a verdict: named, with what would decide it."""
    one = c.verdicts_of()
    e = max(suspect, key=lambda e: e.up)
    fails = [h for h in c.failing() if h in (x.helper for x in suspect)]
    step, _, _ = _advice(c)
    rerun = 4 * max(e.n, 32)
    kernels = True  # a broad excess leaves the kernels' noise in question
    if e.beyond_chance and e.large:
        # above match in most samples, not in a few: the open question is the size of the
        # shift against the tolerated drift, which more samples decide, not more like some
        finding, what = Finding.BROAD_EXCESS, words.broad_excess(e)
        decide = words.broad_excess_step(e, rerun, step)
    else:
        # far above match with none below: the kernels are not named until it is told
        kernels = e.down > 0
        finding, what = Finding.FEW_FAR_ABOVE, words.few_far_above(e)
        decide = words.few_far_above_step(
            max(MIN_COMMON, e.down + MIN_COMMON), step if kernels else None
        )
    blame = kernel_suspects(c.info, c.store) if kernels else []
    return one(
        finding,
        words.suspect(words.failing_gate(fails), level_of(c.match), what, one.basis),
        c.evidence,
        conditions=(1,),
        suspects=blame + state_suspects([e.helper], c.info),
        next_step=decide,
        next_command=rerun_command(c.server, rerun),
    )


def _too_few_common(c: Paths, few: list[Paired]) -> Diagnosis:
    """Too few common samples for the paired test."""
    one = c.verdicts_of()
    step, _, _ = _advice(c)
    return one(
        Finding.TOO_FEW_COMMON,
        words.too_few_common(
            [e.helper for e in few], min(e.n for e in few), level_of(c.match), one.basis
        ),
        c.evidence,
        conditions=(1,),
        suspects=kernel_suspects(c.info, c.store),
        next_step=words.too_few_step(step),
        next_command=rerun_command(c.server, 32),
    )


def _condition1(c: Paths, excess: list[Paired]) -> Diagnosis:
    """Kernel noise, and no cache path above it: condition 1, worded by what was tested."""
    one = c.verdicts_of()
    mlevel = level_of(c.match)
    clean = [h for h in c.cache if c.exact[h]]
    dirty = [h for h in c.cache if not c.exact[h]]
    if c.cache and len(clean) == len(c.cache):
        finding, label = Finding.MATCH_PATH_ONLY, words.match_path_only(clean, mlevel)
    elif not c.cache:
        ran = [h for h in c.uncovered() if h in cache_helpers()]
        finding, label = Finding.CACHE_NOT_TESTED, words.cache_not_tested(ran, mlevel)
    elif c.info.enable_deterministic_inference:
        finding = Finding.DETERMINISTIC_SHAPE
        label = words.deterministic_shape(clean, dirty, mlevel)
    else:
        finding, label = Finding.BATCH_VARIANCE, words.batch_variance(dirty, excess, mlevel)
    limits = tuple(
        noisy_limit(h, path_side(st), path_side(c.match, st.book.order))
        for h, st in c.cache.items()
    )
    c.evidence += [words.limit_line(lim) for lim in limits]
    step, cmd, action = _advice(c)
    if any(not lim.reached for lim in limits):
        samples = 4 * max(max(lim.n for lim in limits), 32)
        det = c.info.enable_deterministic_inference
        return one(
            Finding.NOT_EXCLUDED,
            words.not_excluded(list(c.cache), mlevel, det, c.failing(), one.basis),
            c.evidence + [words.kernels_step(step)],
            conditions=(1,),
            suspects=kernel_suspects(c.info, c.store),
            next_step=words.not_excluded_step(samples),
            next_command=rerun_command(c.server, samples),
            action=action,
            limits=limits,
        )
    return one(
        finding,
        label + words.gate_failures(c.failing()) + words.tail(one.basis),
        c.evidence,
        condition=1,
        conditions=(1,),
        suspects=kernel_suspects(c.info, c.store),
        next_step=step,
        next_command=cmd,
        action=action,
        limits=limits,
    )
