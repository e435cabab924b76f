"""The evidence a diagnosis stands on, read off finished helpers: which are usable, which are
bit-exact, where logprobs are non-finite on both sides, whether a cache-hit helper's k3 exceeds
match's beyond kernel noise (`paired`), and where in generation divergence sits: typed records
(`diagnosis_parts`), whose words are `kltui/words/evidence.py`."""

from __future__ import annotations

import numpy as np

from kltui.metrics.k3 import ScoredSample
from kltui.readings.diagnosis_parts import (
    Affected,
    Concentrated,
    Count,
    Figure,
    Line,
    Nonfinite,
    Onset,
    OnsetKind,
    PageResidues,
    SampleRow,
    Separator,
)
from kltui.readings.paired import (
    EVIDENCE_P,
    MIN_COMMON,
    MIN_RATIO,
    PRIMARY_RATIO,
    STRAY_ULP_FLOOR,
    Paired,
    paired,
    signed_rank_p,
)
from kltui.readings.path_test import PathSide
from kltui.registry import HELPERS, CachePath
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState

__all__ = [
    "EVIDENCE_P",
    "MIN_COMMON",
    "MIN_RATIO",
    "PRIMARY_RATIO",
    "STRAY_ULP_FLOOR",
    "UNUSABLE",
    "Paired",
    "excess_over_match",
    "signed_rank_p",
]

UNUSABLE = ("error", "invalid", "vacuous")


def is_usable(st: HelperState) -> bool:
    """Whether a finished helper's result can be read at all (not errored, invalid or vacuous)."""
    s = st.summary
    return s is not None and s.status not in UNUSABLE and bool(s.scored)


def _both_nonfinite(sample: ScoredSample) -> np.ndarray:
    a = np.asarray(sample.lp_a, dtype=np.float64)
    b = np.asarray(sample.lp_b, dtype=np.float64)
    return ~np.isfinite(a) & ~np.isfinite(b)


def nonfinite_positions(st: HelperState) -> dict[int, list[int]]:
    """Per sample, the positions whose logprob is NaN or inf in prefill and decode alike."""
    out = {}
    for s in st.book.order:
        where = np.flatnonzero(_both_nonfinite(st.book.samples[s]))
        if where.size:
            out[s] = where.tolist()
    return out


def nonfinite_of(helper: str, where: dict[int, list[int]]) -> Nonfinite:
    """The samples and positions where a helper saw non-finite logprobs on both sides."""
    return Nonfinite(helper, tuple((s, tuple(p)) for s, p in where.items()))


def _differs(sample: ScoredSample) -> np.ndarray:
    a = np.asarray(sample.lp_a, dtype=np.float64)
    b = np.asarray(sample.lp_b, dtype=np.float64)
    return ~(a == b) & ~_both_nonfinite(sample)


def differing_samples(st: HelperState) -> tuple[int, ...]:
    """The sample ids with a differing token (non-finite pairs left out)."""
    return tuple(s for s in st.book.order if _differs(st.book.samples[s]).any())


def is_exact(st: HelperState) -> bool:
    """No differing token, leaving out positions non-finite on both sides."""
    if (HelperView.of(st).summary.samples_with_difference or 0) == 0:
        return True
    if not st.book.order:  # a summary without per-token values: its own count decides
        return False
    return not any(_differs(st.book.samples[s]).any() for s in st.book.order)


def sample_mean(sample: ScoredSample) -> float:
    """A sample's mean k3 over its positions where both sides are finite."""
    keep = ~_both_nonfinite(sample)
    k = np.asarray(sample.k3)[keep]
    return float(np.mean(k)) if k.size else float("nan")


def count_of(st: HelperState) -> Count:
    """One helper's evidence: samples that differ, avg_kl_div, max k3, first divergence."""
    s = HelperView.of(st).summary
    fd = s.first_divergence
    first = (fd["sample"], fd["position"]) if fd else None
    return Count(st.helper, s.samples_with_difference or 0, s.scored, s.avg_kl_div, s.max_k3, first)


def level_of(st: HelperState) -> float:
    """avg_kl_div over the positions that count (non-finite pairs left out)."""
    v = HelperView.of(st).summary.avg_kl_div
    if v is not None and np.isfinite(v):
        return float(v)
    means = [sample_mean(st.book.samples[s]) for s in st.book.order]
    finite = [m for m in means if np.isfinite(m)]
    return float(np.mean(finite)) if finite else float("inf")


def excess_over_match(st: HelperState, match: HelperState) -> Paired:
    """The cache-hit helper against match on the same sample ids (`paired.paired`)."""
    a, m = st.book.samples, match.book.samples
    common = [s for s in st.book.order if s in m]
    mine = np.array([sample_mean(a[s]) for s in common], dtype=np.float64)
    theirs = np.array([sample_mean(m[s]) for s in common], dtype=np.float64)
    return paired(st.helper, mine, theirs, level_of(st))


def path_side(st: HelperState, order: list[int] | None = None) -> PathSide:
    """What `path_test.judge` reads of a helper: per-sample means in `order` (NaN where it
    did not score the sample; its own order when None), differing and compared tokens."""
    samples = st.book.samples
    ids = st.book.order if order is None else order
    means = np.array(
        [sample_mean(samples[s]) if s in samples else np.nan for s in ids], dtype=np.float64
    )
    per = [int(np.count_nonzero(_differs(samples[s]))) for s in st.book.order]
    differing, differing_samples, compared = sum(per), sum(1 for k in per if k), len(per)
    tokens = sum(int(np.count_nonzero(~_both_nonfinite(samples[s]))) for s in st.book.order)
    if not st.book.order:  # a summary without per-token values: its own counts decide
        s = HelperView.of(st).summary
        # the summary counts differing samples only: they stand in for the tokens too
        differing = differing_samples = (
            0 if is_exact(st) else max(1, s.samples_with_difference or 1)
        )
        tokens, compared = s.tokens or 0, HelperView.of(st).scored
    passed = st.summary is None or st.summary.result != "fail"
    return PathSide(
        means, differing, tokens, level_of(st), passed, differing_samples, max(compared, 0)
    )


def _row(p: dict) -> SampleRow:
    return SampleRow(p["index"], p.get("prompt_len"), p.get("cached_tokens"))


def affected_in_common(st: HelperState, ids: list[int], rows: dict) -> tuple[Separator, ...]:
    """What the affected samples share that the others do not: a prompt length, context
    (prompt + generated) or cached_tokens threshold that separates them (the first two)."""
    others = [i for i in st.book.order if i not in set(ids)]
    if not ids or not others:
        return ()

    def figure(i: int, key: Figure) -> float | None:
        p = rows.get(i) or {}
        if key is Figure.CONTEXT:
            plen, sample = p.get("prompt_len"), st.book.samples.get(i)
            return None if plen is None or sample is None else float(plen + sample.k3.size)
        v = p.get("prompt_len" if key is Figure.PROMPT else "cached_tokens")
        return float(v) if isinstance(v, int | float) else None

    out = []
    for key in Figure:
        fa = [figure(i, key) for i in ids]
        fb = [figure(i, key) for i in others]
        a = [v for v in fa if v is not None]
        b = [v for v in fb if v is not None]
        if len(a) < len(fa) or len(b) < len(fb):
            continue
        if min(a) > max(b):
            out.append(Separator(key, True, min(a), max(b)))
        elif max(a) < min(b):
            out.append(Separator(key, False, max(a), min(b)))
    return tuple(out[:2])


def affected_of(st: HelperState, ids: list[int], rows: dict) -> Affected:
    """The samples far above match with their prompt and cache figures, and what sets them
    apart."""
    listed = tuple(_row(rows[i]) if i in rows else SampleRow(i, recorded=False) for i in ids)
    return Affected(st.helper, listed, affected_in_common(st, ids, rows))


def _onset(helper: str, rows: list[dict]) -> Onset:
    """Where in generation the divergent samples start to differ."""
    firsts = np.array([p["first_divergence"] for p in rows])
    at_start = int(np.count_nonzero(firsts == 0))
    jumps = sum(1 for p in rows if p.get("first_above_tail") == 0)
    # what the state the decode started from holds: the prompt's prefix, plus turn 1's
    # decode-written KV for decode_cache_hit (registry: the path it restores)
    decode = helper in HELPERS and HELPERS[helper].cache_path == CachePath.DECODE
    n = len(rows)
    if at_start == n:
        kind = (
            OnsetKind.RESTORED_WRONG
            if jumps * 2 >= n
            else OnsetKind.FIRST_ROUNDING
            if jumps == 0
            else OnsetKind.FIRST_MIXED
        )
        return Onset(helper, kind, n, jumps, at_start, 0, None, None, decode)
    later = firsts[firsts > 0]
    kind = OnsetKind.SOME_LATER if at_start else OnsetKind.MID
    med, low = int(np.median(later)), int(later.min())
    return Onset(helper, kind, n, jumps, at_start, int(later.size), med, low, decode)


def shape_of(st: HelperState, page_size: int | None) -> list[Line]:
    """Which sequences diverge and where in generation: the two questions the KL guide asks."""
    s = HelperView.of(st).summary
    helper = st.helper
    rows = [p for p in s.per_sample if p.get("n_nonzero")]
    scored = s.scored or 0
    if not rows or not scored:
        return []
    out: list[Line] = []
    if len(rows) <= scored / 4:
        listed = tuple(_row(p) for p in rows[:6])
        out.append(Concentrated(helper, len(rows), scored, listed))
    if isinstance(page_size, int) and page_size > 1:
        passing = [p for p in s.per_sample if not p.get("n_nonzero")]

        # cached_tokens is a whole number of pages by construction; the prompt's partial
        # last page (prompt_len % page size) is what a page-granular restore can get wrong
        def residues(ps: list[dict]) -> tuple[int, ...]:
            return tuple(sorted({int(p["prompt_len"]) % page_size for p in ps}))

        if passing:
            out.append(PageResidues(helper, page_size, residues(rows), residues(passing)))
    out.append(_onset(helper, rows))
    return out
