"""A match whose divergence follows the sliding window (issue 57): on a server whose model has a
sliding window, a fault in the window's eviction shows in every helper's decode, match's
included, once decoding passes the window. When the samples of match that differ are exactly
(or among) those whose decode passed the window, and every sample that stayed within it is
bit-identical, the kernels agree where the window was never handed off: a state bug on the
window, never kernel noise (a deterministic reference server with `--fault swa-early-evict` read
"conditions 1 and 2 ... find the kernel" before).

The decision is the one-path test over samples, as for the reused cache
(`diagnosis_restore`): the chance that noise shared by every path put all k differing samples
of match on its n samples past the window and none on the others. The window is the model's,
not read off the run, so there is one threshold, not one per value. The cache helpers are
judged against match's exact samples.
"""

from __future__ import annotations

from kltui.engines.identity import ServerIdentity
from kltui.readings.diagnosis_parts import (
    Headline,
    Suspect,
    SuspectKind,
)
from kltui.readings.diagnosis_paths import Paths
from kltui.readings.diagnosis_restore import exact_side, one_path_evidence, split_verdict
from kltui.readings.evidence import (
    EVIDENCE_P,
    STRAY_ULP_FLOOR,
    differing_samples,
    level_of,
)
from kltui.readings.findings import Finding
from kltui.readings.geometry_evidence import geometry_of_info, shape_in
from kltui.readings.geometry_parts import WindowSplit
from kltui.readings.paired import one_path_p
from kltui.readings.path_test import STATE, UNCLEAR, PathSide
from kltui.readings.verdict import Diagnosis
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState


def window_split(
    match: HelperState, info: ServerIdentity, exact_others: int = 0
) -> WindowSplit | None:
    """match's differing samples when each one decoded past the window and every sample that
    stayed within it is bit-identical (None: no window, match at rounding level, a differing
    sample within the window, or no sample within it)."""
    g = geometry_of_info(info)
    if g.window is None or g.window.size.value <= 0:
        return None
    window = g.window.size.value
    differing = set(differing_samples(match))
    if not differing or level_of(match) <= STRAY_ULP_FLOOR:
        return None
    rows = {
        p["index"]: p
        for p in HelperView.of(match).summary.per_sample
        if isinstance(p, dict) and isinstance(p.get("prompt_len"), int)
    }
    order = match.book.order
    if any(i not in rows for i in order):
        return None
    passed = tuple(
        i for i in order if rows[i]["prompt_len"] + match.book.samples[i].k3.size - 1 > window
    )
    within = len(order) - len(passed)
    if not within or not differing <= set(passed):
        return None
    k = len(differing)
    p_samples = min(1.0, one_path_p(k, len(passed), within + exact_others))
    shown = tuple(i for i in order if i in differing)
    p_position = position_p(match, shown, rows, window, info.page_size or 1)
    if p_position is None:
        return None
    p = max(p_samples, p_position)
    return WindowSplit(match.helper, window, passed, shown, within, p, p_samples, p_position)


def position_p(
    match: HelperState, differing: tuple[int, ...], rows: dict, window: int, page: int
) -> float | None:
    """The chance that noise not tied to the window began every differing sample at or after
    its handoff (None: one began before it, one page of slack allowed, so the window cannot
    explain it). Why a second test: the samples that pass the window are the longest, and noise
    whose chance grows with a sample's length also lands on them (simulated: up to 0.9 % false
    condition 2 with the sample test alone, docs/DIAGNOSIS.md); where such noise starts is not
    tied to the handoff, so each factor is the share of generated positions at or after it
    (uniform start; noise that starts early makes it smaller still)."""
    p = 1.0
    for i in differing:
        first = match.book.samples[i].metrics.first_divergence
        n = match.book.samples[i].k3.size
        if first is None or n <= 0:
            continue
        share = start_share(first, n, handoff_start(rows[i]["prompt_len"], window, page))
        if share is None:
            return None
        p *= share
    return p


def handoff_start(prompt: int, window: int, page: int) -> int:
    """The first generated position a window fault can change: the first whose context is past
    the window (decode step 1 for a prompt already past it: position 0 comes from the prefill),
    less one page of slack (a pool that evicts a page early)."""
    handoff = window - prompt + 1 if prompt <= window else 1
    return max(0, handoff - page)


def start_share(first: int, n: int, start: int) -> float | None:
    """The share of a sample's `n` generated positions at or after `start`, the chance that a
    difference not tied to the window began there (None: it began before, not the window)."""
    if first < start:
        return None
    return (n - min(start, n)) / n


def within_side(match: HelperState, split: WindowSplit) -> PathSide:
    """What `judge` reads of match on the samples that stayed within the window: exact."""
    return exact_side(match, split.passed, split.within)


def windowed(c: Paths, split: WindowSplit) -> Diagnosis:
    """Condition 2 on the window when the one-path test says so for match's samples past it
    or for a cache path against match's exact ones; else inconclusive, never kernels."""
    one = c.verdicts_of()
    c.evidence.append(split)
    c.evidence += [
        one_path_evidence(c, v, split.within) for v in c.verdicts if v.kind in (STATE, UNCLEAR)
    ]
    # a cache path judged against match's samples within the window meets the same confound
    # (its differing samples are the long ones): it decides only where the starts do too
    names = [v.helper for v in c.of(STATE)] if split.p_position < EVIDENCE_P else []
    c.evidence += shape_in(c.match, c.info)
    c.evidence += [x for h in names for x in shape_in(c.cache[h], c.info)]
    figures = Headline(
        helpers=tuple(names),
        samples=split.differing,
        n=len(split.passed),
        cold=split.within,
        least=split.window,
        p=split.p,
    )
    suspects = [Suspect(SuspectKind.WINDOW_EVICTION, figure=split.window)]
    kinds = (Finding.WINDOW_STATE, Finding.WINDOW_UNCLEAR)
    return split_verdict(c, one, kinds, figures, suspects, split.p)
