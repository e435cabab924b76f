"""A match whose divergence follows the reused cache (issue 57's audit): with one request at a
time (`--max-running-requests 1`), later prompts reuse the prefix that earlier prompts left in
the radix cache, so match's own decode runs on a hit in some samples. When the samples that
differ are exactly those that reused the most cached tokens (at least `least`), and every
sample that reused fewer is bit-identical, the kernels agree where less was restored and the
divergence is a state bug on the restore, whichever helper shows it: never kernel noise
(a deterministic stale-prefix server read 16 of 32 samples differing, each with 4 or more
cached tokens, the 16 with 0-3 exact).

The test is the one-path test of `path_test` (samples, not tokens): the chance that noise
shared by every path put all k differing samples of match on its n cached ones and none on the
others nor on an exact cache path's samples, times the thresholds that could have been read
off the run; the cache helpers are judged against match's exact samples.
"""

from __future__ import annotations

from collections.abc import Sequence

from kltui.readings.advice import (
    CONDITION2_STEP,
    cross_check_command,
    rerun_command,
    state_suspects,
)
from kltui.readings.diagnosis_parts import CachedDecode, Headline, Line, OnePath, Step, StepKind
from kltui.readings.diagnosis_paths import Paths
from kltui.readings.evidence import (
    EVIDENCE_P,
    STRAY_ULP_FLOOR,
    differing_samples,
    level_of,
    path_side,
)
from kltui.readings.findings import Finding
from kltui.readings.geometry_evidence import shape_in
from kltui.readings.paired import one_path_p
from kltui.readings.path_test import STATE, UNCLEAR, PathSide, PathVerdict
from kltui.readings.verdict import Diagnosis, Verdicts
from kltui.registry import cache_helpers
from kltui.session.store import HelperState


def restore_split(match: HelperState, exact_others: int = 0) -> CachedDecode | None:
    """match's differing samples, when every one reused at least `least` cached tokens and
    every sample that reused fewer is bit-identical (None: a differing sample reused none, no
    sample reused fewer, or match at rounding level). `exact_others`: the samples of exact
    cache paths, where noise shared by every path could also fall."""
    book = match.book
    differing = differing_samples(match)
    if not differing or level_of(match) <= STRAY_ULP_FLOOR:
        return None
    tokens = {i: book.samples[i].cached_tokens for i in book.order}
    least = min(tokens[i] for i in differing)
    cached = tuple(i for i in book.order if tokens[i] >= least)
    cold = len(book.order) - len(cached)
    if least <= 0 or not cold:
        return None
    # the threshold was read off the run: every value it could have taken is a test of its own
    thresholds = len({t for t in tokens.values() if t > 0})
    p = min(1.0, thresholds * one_path_p(len(differing), len(cached), cold + exact_others))
    lengths = {i: book.samples[i].prompt_len for i in book.order}
    shortest = min(lengths[j] for j in differing)
    longest = sum(lengths[i] >= shortest for i in book.order)
    p_length = one_path_p(len(differing), longest, len(book.order) - longest)
    return CachedDecode(match.helper, least, cached, differing, cold, p, p_length)


def exact_side(match: HelperState, excluded: Sequence[int], n: int) -> PathSide:
    """What `judge` reads of match on its `n` samples outside `excluded`: exact (the samples
    that reused fewer cached tokens, or that stayed within the window)."""
    rest = [i for i in match.book.order if i not in set(excluded)]
    whole = path_side(match, rest)
    return PathSide(whole.means, 0, whole.tokens, 0.0, whole.passed, 0, n)


def cold_side(match: HelperState, split: CachedDecode) -> PathSide:
    """What `judge` reads of match on the samples that reused fewer cached tokens: exact."""
    return exact_side(match, split.cached, split.cold)


def one_path_evidence(c: Paths, v: PathVerdict, n_exact: int) -> OnePath:
    """A cache path's one-path record against match's `n_exact` exact samples."""
    s = path_side(c.cache[v.helper])
    clean = tuple((h, path_side(st).samples) for h, st in c.cache.items() if c.exact[h])
    return OnePath(
        v.helper, s.differing_samples, s.samples, s.differing, s.tokens, n_exact, clean, v.p
    )


def restored(c: Paths, split: CachedDecode) -> Diagnosis:
    """Condition 2 on the restore path when the one-path test says so for match's cached
    samples or for a cache path against match's cold ones; else inconclusive, never kernels.
    `c.verdicts` were judged against match's cold samples (`cold_side`)."""
    one = c.verdicts_of()
    c.evidence.append(split)
    c.evidence += [
        one_path_evidence(c, v, split.cold) for v in c.verdicts if v.kind in (STATE, UNCLEAR)
    ]
    # a cache path judged against match's cold samples meets the same confound
    names = [v.helper for v in c.of(STATE)] if not split.confounded else []
    shapes: list[Line] = shape_in(c.match, c.info)
    c.evidence += shapes + [x for h in names for x in shape_in(c.cache[h], c.info)]
    figures = Headline(
        helpers=tuple(names),
        samples=split.differing,
        n=len(split.cached),
        cold=split.cold,
        least=split.least,
        p=split.p,
        primary=next((h for h in cache_helpers() if h in names), cache_helpers()[0]),
    )
    suspects = state_suspects(names or [cache_helpers()[0]], c.info)
    kinds = (Finding.RESTORE_STATE, Finding.RESTORE_UNCLEAR)
    return split_verdict(c, one, kinds, figures, suspects, 1.0 if split.confounded else split.p)


def split_verdict(
    c: Paths,
    one: Verdicts,
    kinds: tuple[Finding, Finding],
    figures: Headline,
    suspects: list,
    p: float,
) -> Diagnosis:
    """A divergence confined to one side of a split (the reused cache, the window): condition 2
    (kinds[0]) when the split's own test or a cache path against match's exact samples says
    so, else inconclusive (kinds[1]) with a larger run to decide it; never kernel advice."""
    if p < EVIDENCE_P or figures.helpers:
        return one(
            kinds[0],
            figures,
            c.evidence,
            condition=2,
            conditions=(2,),
            suspects=suspects,
            step=CONDITION2_STEP,
            command=cross_check_command(c.server, list(figures.helpers)),
        )
    return one(
        kinds[1],
        figures,
        c.evidence,
        suspects=suspects,
        step=Step(StepKind.STATE_UNCLEAR),
        command=rerun_command(c.server, 128),
    )
