"""The evidence a diagnosis stands on, read off finished helpers: which are usable, which are
bit-exact, where logprobs are non-finite on both sides, whether a cache-hit helper's k3 exceeds
match's beyond kernel noise (`paired`), and where in generation divergence sits."""

from __future__ import annotations

import numpy as np

from kltui.fmt import sci
from kltui.metrics.k3 import ScoredSample
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
from kltui.registry import HELPERS
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


def nonfinite_line(helper: str, where: dict[int, list[int]]) -> str:
    """The line naming the samples and positions where a helper saw non-finite logprobs."""
    n = sum(len(p) for p in where.values())
    listed = "; ".join(
        f"#{s} @ {', '.join(map(str, p[:6]))}{' …' if len(p) > 6 else ''}"
        for s, p in list(where.items())[:6]
    )
    more = f" (and {len(where) - 6} more samples)" if len(where) > 6 else ""
    return (
        f"{helper}: {n} non-finite logprobs (NaN or inf) at the same positions in prefill and "
        f"decode: {listed}{more}: a numeric fault in the model's output on both paths, not a "
        "prefill/decode difference; these positions are left out of the diagnosis"
    )


def _differs(sample: ScoredSample) -> np.ndarray:
    a = np.asarray(sample.lp_a, dtype=np.float64)
    b = np.asarray(sample.lp_b, dtype=np.float64)
    return ~(a == b) & ~_both_nonfinite(sample)


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


def count_line(st: HelperState) -> str:
    """The evidence line of one helper: samples that differ, avg_kl_div, max k3, first divergence."""
    s = HelperView.of(st).summary
    fd = s.first_divergence
    where = f", first divergence sample {fd['sample']} @ {fd['position']}" if fd else ""
    return (
        f"{st.helper}: {(s.samples_with_difference or 0)}/{s.scored} samples differ, "
        f"avg_kl_div {sci(s.avg_kl_div)}, max k3 {sci(s.max_k3)}{where}"
    )


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


def affected_in_common(st: HelperState, ids: list[int], rows: dict) -> str:
    """What the affected samples share that the others do not: a prompt length, context
    (prompt + generated) or cached_tokens threshold that separates them, or a page remainder."""
    others = [i for i in st.book.order if i not in set(ids)]
    if not ids or not others:
        return ""

    def figure(i: int, key: str) -> float | None:
        p = rows.get(i) or {}
        if key == "context":
            plen, sample = p.get("prompt_len"), st.book.samples.get(i)
            return None if plen is None or sample is None else float(plen + sample.k3.size)
        v = p.get(key)
        return float(v) if isinstance(v, int | float) else None

    out = []
    for key, name in (
        ("context", "prompt + generated"),
        ("prompt_len", "prompt length"),
        ("cached_tokens", "cached_tokens"),
    ):
        fa = [figure(i, key) for i in ids]
        fb = [figure(i, key) for i in others]
        a = [v for v in fa if v is not None]
        b = [v for v in fb if v is not None]
        if len(a) < len(fa) or len(b) < len(fb):
            continue
        if min(a) > max(b):
            out.append(f"every one has {name} >= {min(a):g} (the others <= {max(b):g})")
        elif max(a) < min(b):
            out.append(f"every one has {name} <= {max(a):g} (the others >= {min(b):g})")
    return "; ".join(out[:2])


def shape_lines(st: HelperState, page_size: int | None) -> list[str]:
    """Which sequences diverge and where in generation: the two questions the KL guide asks."""
    s = HelperView.of(st).summary
    helper = st.helper
    rows = [p for p in s.per_sample if p.get("n_nonzero")]
    scored = s.scored or 0
    if not rows or not scored:
        return []
    out = []
    if len(rows) <= scored / 4:
        bad = ", ".join(
            f"#{p['index']} (prompt {p['prompt_len']}, cached {p['cached_tokens']})"
            for p in rows[:6]
        )
        out.append(
            f"{helper}: divergence is concentrated in {len(rows)} of {scored} requests: {bad}; "
            "compare their prompt length and cached_tokens with the passing ones"
        )
    if isinstance(page_size, int) and page_size > 1:
        passing = [p for p in s.per_sample if not p.get("n_nonzero")]

        # cached_tokens is a whole number of pages by construction; the prompt's partial
        # last page (prompt_len % page size) is what a page-granular restore can get wrong
        def residues(ps: list[dict]) -> str:
            vals = sorted({int(p["prompt_len"]) % page_size for p in ps})
            return ", ".join(map(str, vals[:8])) + (" …" if len(vals) > 8 else "")

        if passing:
            out.append(
                f"{helper}: prompt tokens past the last full page (prompt_len % page size "
                f"{page_size}): divergent {{{residues(rows)}}}, passing {{{residues(passing)}}}"
            )
    firsts = np.array([p["first_divergence"] for p in rows])
    at_start = int(np.count_nonzero(firsts == 0))
    jumps = sum(1 for p in rows if p.get("first_above_tail") == 0)
    # what the state the decode started from holds: the prompt's prefix, plus turn 1's
    # decode-written KV for decode_cache_hit (registry: the path it restores)
    restored = {"decode": "prompt and decode-written KV"}.get(
        (HELPERS[helper].cache_path or "") if helper in HELPERS else "", "restored prefix"
    )
    if at_start == len(rows) and jumps * 2 >= len(rows):
        out.append(
            f"{helper}: every divergent sample differs from the first generated token, above "
            f"the tail threshold there in {jumps} of {len(rows)}: the state the decode started "
            f"from ({restored}, or attention over it) was already wrong when generation began"
        )
    elif at_start == len(rows) and jumps == 0:
        out.append(
            f"{helper}: every divergent sample differs from the first generated token, but at "
            "rounding level there (below the tail threshold in every one), as kernel noise "
            "does: where it starts says nothing about the state"
        )
    elif at_start == len(rows):
        out.append(
            f"{helper}: every divergent sample differs from the first generated token, above "
            f"the tail threshold there in {jumps} of {len(rows)} and below it in the rest: "
            "a large first-token difference in some, rounding in others"
        )
    else:
        later = firsts[firsts > 0]
        out.append(
            f"{helper}: divergence starts at the first generated token in {at_start} of "
            f"{len(rows)} divergent samples and later in {later.size} (median position "
            f"{int(np.median(later))}, earliest {int(later.min())}): something during decode "
            "in those (window hand-off, checkpoint rotation, batch composition)"
            if at_start
            else f"{helper}: divergence starts mid-generation (median position "
            f"{int(np.median(firsts))}, earliest {int(firsts.min())}): something during "
            "decode (window hand-off, checkpoint rotation, batch composition)"
        )
    return out
