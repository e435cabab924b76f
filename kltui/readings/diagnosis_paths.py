"""The diagnosis once match and the cache paths were compared (`diagnosis.py` gets here when
match tested its path and something differs): with match exact, a cache path that differs is
condition 2 when shared noise could not have missed every other path (`match_exact`); with
match noisy, a cache path is condition 2 only beyond match's noise on the same prompts
(`match_noisy`). Decisions only: the words are `kltui/words/diagnosis.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kltui.engines.identity import ServerIdentity
from kltui.readings.advice import (
    CONDITION2_STEP,
    condition1_advice,
    cross_check_command,
    kernel_suspects,
    rerun_command,
    state_suspects,
)
from kltui.readings.coverage import NotTested, Untested
from kltui.readings.diagnosis_parts import (
    Affected,
    Command,
    Headline,
    KernelsStep,
    LimitLine,
    Line,
    Noise,
    OnePath,
    PairedLine,
    Step,
    StepKind,
    Stray,
)
from kltui.readings.evidence import (
    MIN_COMMON,
    PRIMARY_RATIO,
    STRAY_ULP_FLOOR,
    Paired,
    affected_of,
    is_exact,
    level_of,
    path_side,
)
from kltui.readings.findings import Basis, Finding
from kltui.readings.geometry_evidence import shape_in
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
    evidence: list[Line]
    why: dict[str, Untested]
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
        return [h for h, w in self.why.items() if w.kind != NotTested.NOT_RUN]

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
        return replace(self.given, tested=tuple(tested), untested=dict(self.given.untested))

    def verdicts_of(self) -> Verdicts:
        """The builder of this server's Diagnosis, on this basis."""
        return Verdicts(self.server, self.rested())


def _affected_ids(st: HelperState, e: Paired) -> tuple[int, ...]:
    """The sample ids of the paired test's affected positions (in the helper's order)."""
    order = st.book.order
    return tuple(order[i] for i in e.affected if i < len(order))


# --------------------------------------------------------------------------- match exact
def _one_path(
    c: Paths, v: PathVerdict, match_samples: int, clean: tuple[tuple[str, int], ...]
) -> OnePath:
    """The one-path test's figures for a cache path that differs while match is exact."""
    side = path_side(c.cache[v.helper])
    return OnePath(
        v.helper,
        side.differing_samples,
        side.samples,
        side.differing,
        side.tokens,
        match_samples,
        clean,
        v.p,
    )


def match_exact(c: Paths) -> Diagnosis:
    """Kernels agree on match's shapes; a divergence only a cache path shows is state, when it
    is above the floor and more than noise shared by every path could put on one path alone."""
    one = c.verdicts_of()
    stray, unclear, state = c.of(STRAY), c.of(UNCLEAR), c.of(STATE)
    clean = tuple((h, path_side(st).samples) for h, st in c.cache.items() if is_exact(st))
    msamples = path_side(c.match).samples
    c.evidence += [Stray(v.helper) for v in stray]
    c.evidence += [_one_path(c, v, msamples, clean) for v in (*state, *unclear)]
    if state:
        names = [v.helper for v in state]
        primary = next(h for h in cache_helpers() if h in names)  # prefill-written KV first
        c.evidence += [x for h in names for x in shape_in(c.cache[h], c.info)]
        return one(
            Finding.STATE_BUG,
            Headline(helpers=tuple(names), primary=primary),
            c.evidence,
            condition=2,
            conditions=(2,),
            suspects=state_suspects(names, c.info),
            step=CONDITION2_STEP,
            command=cross_check_command(c.server, names),
        )
    if unclear:
        names = [v.helper for v in unclear]
        c.evidence += [x for h in names for x in shape_in(c.cache[h], c.info)]
        return one(
            Finding.STATE_UNCLEAR,
            Headline(helpers=tuple(names), p=min(v.p or 1 for v in unclear)),
            c.evidence,
            suspects=state_suspects(names, c.info),
            step=Step(StepKind.STATE_UNCLEAR),
            command=rerun_command(c.server, 128),
        )
    below = [v.helper for v in stray]
    step, cmd, action = condition1_advice(
        c.server, c.info, c.cache[below[0]], c.failing(), c.uncovered()
    )
    return one(
        Finding.STRAY_ULPS,
        Headline(helpers=tuple(below), level=level_of(c.cache[below[0]])),
        c.evidence,
        condition=1,
        conditions=(1,),
        step=step,
        command=cmd,
        action=action,
    )


# --------------------------------------------------------------------------- match noisy
def _paired_of(c: Paths, kind: str) -> list[Paired]:
    return [v.paired for v in c.of(kind) if v.paired is not None]


def _affected_line(st: HelperState, e: Paired) -> Affected:
    """The samples far above match, and what they share that the others do not."""
    s = HelperView.of(st).summary
    rows = {p.get("index"): p for p in s.per_sample if isinstance(p, dict)}
    return affected_of(st, list(_affected_ids(st, e)), rows)


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
    c.evidence += [PairedLine(e) for e in excess]
    for v in c.of(NOISE):
        if v.paired is not None and v.paired.beyond_chance:
            c.evidence.append(Noise(v.paired))
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
    c.evidence += shape_in(c.cache[f.helper], c.info)
    return one(
        Finding.DIRECT_STATE,
        Headline(helpers=(f.helper,), samples=f.up, level=f.top, match_level=level_of(c.match)),
        c.evidence,
        condition=2,
        conditions=(1, 2),
        suspects=state_suspects([f.helper], c.info),
        step=CONDITION2_STEP,
        command=cross_check_command(c.server, [f.helper]),
    )


def _far_above(c: Paths, f: Far) -> Diagnosis:
    """Samples orders of magnitude above match with none the other way, short of evidence:
    named, never read as kernel noise, never sent to the kernels' dumps."""
    one = c.verdicts_of()
    c.evidence += shape_in(c.cache[f.helper], c.info)
    samples = 4 * max(f.n, 32)
    return one(
        Finding.FAR_ABOVE,
        Headline(helpers=(f.helper,), samples=f.up, n=f.n, match_level=level_of(c.match)),
        c.evidence,
        conditions=(1,),
        suspects=state_suspects([f.helper], c.info),
        step=Step(StepKind.NOT_EXCLUDED, samples=samples),
        command=rerun_command(c.server, samples),
    )


def _advice(c: Paths) -> tuple[Step, Command | None, str | None]:
    return condition1_advice(c.server, c.info, c.match, c.failing(), c.uncovered())


def _state_beyond_noise(c: Paths, state: list[Paired]) -> Diagnosis:
    """A cache path beyond match's noise on the same prompts: condition 2 on top of 1, and
    first when it is orders of magnitude above a match within its gate."""
    one = c.verdicts_of()
    names = [e.helper for e in state]
    for e in state:
        if e.affected and e.up < e.n:
            c.evidence.append(_affected_line(c.cache[e.helper], e))
    c.evidence += [x for h in names for x in shape_in(c.cache[h], c.info)]
    mlevel = level_of(c.match)
    top = max(state, key=lambda e: e.level)
    suspects = kernel_suspects(c.info, c.store)
    gate_ok = c.match.summary is not None and c.match.summary.result == "pass"
    if gate_ok and top.level >= PRIMARY_RATIO * max(mlevel, STRAY_ULP_FLOOR):
        return one(
            Finding.STATE_BUG_FIRST,
            Headline(helpers=tuple(names), level=top.level, match_level=mlevel),
            c.evidence,
            condition=2,
            conditions=(1, 2),
            suspects=state_suspects(names, c.info) + suspects,
            step=CONDITION2_STEP,
            command=cross_check_command(c.server, names),
        )
    step, cmd, action = _advice(c)
    return one(
        Finding.BOTH,
        Headline(helpers=tuple(names), match_level=mlevel),
        c.evidence,
        condition=1,
        conditions=(1, 2),
        suspects=suspects + state_suspects(names, c.info),
        step=step,
        command=cmd,
        action=action,
    )


def _suspected(c: Paths, suspect: list[Paired]) -> Diagnosis:
    """Above match but short of a verdict: named, with what would decide it."""
    one = c.verdicts_of()
    e = max(suspect, key=lambda e: e.up)
    fails = tuple(h for h in c.failing() if h in (x.helper for x in suspect))
    step, _, _ = _advice(c)
    rerun = 4 * max(e.n, 32)
    kernels = True  # a broad excess leaves the kernels' noise in question
    if e.beyond_chance and e.large:
        # above match in most samples, not in a few: the open question is the size of the
        # shift against the tolerated drift, which more samples decide, not more like some
        finding = Finding.BROAD_EXCESS
        decide = Step(StepKind.BROAD_EXCESS, samples=rerun, ratio=e.ratio, then=step)
    else:
        # far above match with none below: the kernels are not named until it is told
        kernels = e.down > 0
        finding = Finding.FEW_FAR_ABOVE
        need = max(MIN_COMMON, e.down + MIN_COMMON)
        decide = Step(StepKind.FEW_FAR_ABOVE, samples=need, then=step if kernels else None)
    blame = kernel_suspects(c.info, c.store) if kernels else []
    return one(
        finding,
        Headline(failing=fails, match_level=level_of(c.match), paired=e),
        c.evidence,
        conditions=(1,),
        suspects=blame + state_suspects([e.helper], c.info),
        step=decide,
        command=rerun_command(c.server, rerun),
    )


def _too_few_common(c: Paths, few: list[Paired]) -> Diagnosis:
    """Too few common samples for the paired test."""
    one = c.verdicts_of()
    step, _, _ = _advice(c)
    names = tuple(e.helper for e in few)
    return one(
        Finding.TOO_FEW_COMMON,
        Headline(helpers=names, n=min(e.n for e in few), match_level=level_of(c.match)),
        c.evidence,
        conditions=(1,),
        suspects=kernel_suspects(c.info, c.store),
        step=Step(StepKind.TOO_FEW, samples=32, then=step),
        command=rerun_command(c.server, 32),
    )


def _condition1_finding(c: Paths, excess: list[Paired]) -> tuple[Finding, Headline]:
    """Which condition-1 reading, by what was tested, with its figures."""
    mlevel = level_of(c.match)
    clean = tuple(h for h in c.cache if c.exact[h])
    dirty = tuple(h for h in c.cache if not c.exact[h])
    failing = tuple(c.failing())
    if c.cache and len(clean) == len(c.cache):
        return Finding.MATCH_PATH_ONLY, Headline(others=clean, match_level=mlevel, failing=failing)
    if not c.cache:
        ran = tuple(h for h in c.uncovered() if h in cache_helpers())
        return Finding.CACHE_NOT_TESTED, Headline(others=ran, match_level=mlevel, failing=failing)
    if c.info.enable_deterministic_inference:
        figures = Headline(helpers=dirty, others=clean, match_level=mlevel, failing=failing)
        return Finding.DETERMINISTIC_SHAPE, figures
    figures = Headline(helpers=dirty, excess=tuple(excess), match_level=mlevel, failing=failing)
    return Finding.BATCH_VARIANCE, figures


def _condition1(c: Paths, excess: list[Paired]) -> Diagnosis:
    """Kernel noise, and no cache path above it: condition 1, worded by what was tested."""
    one = c.verdicts_of()
    finding, figures = _condition1_finding(c, excess)
    limits = tuple(
        noisy_limit(h, path_side(st), path_side(c.match, st.book.order))
        for h, st in c.cache.items()
    )
    c.evidence += [LimitLine(lim) for lim in limits]
    step, cmd, action = _advice(c)
    if any(not lim.reached for lim in limits):
        samples = 4 * max(max(lim.n for lim in limits), 32)
        det = c.info.enable_deterministic_inference
        return one(
            Finding.NOT_EXCLUDED,
            Headline(
                helpers=tuple(c.cache),
                match_level=figures.match_level,
                deterministic=det,
                failing=figures.failing,
            ),
            c.evidence + [KernelsStep(step)],
            conditions=(1,),
            suspects=kernel_suspects(c.info, c.store),
            step=Step(StepKind.NOT_EXCLUDED, samples=samples),
            command=rerun_command(c.server, samples),
            action=action,
            limits=limits,
        )
    return one(
        finding,
        figures,
        c.evidence,
        condition=1,
        conditions=(1,),
        suspects=kernel_suspects(c.info, c.store),
        step=step,
        command=cmd,
        action=action,
        limits=limits,
    )
