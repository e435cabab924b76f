"""Cross-engine metrics: the same token ids teacher-forced through SGLang (side A) and vLLM (B).

Per position (all vectorized over positions; no per-token Python loops):
- `lp_a`, `lp_b`: each engine's logprob of the token actually at that position; `abs_delta` is
  |lp_a - lp_b| and `k3` the usual exp(r) - 1 - r with r = lp_a - lp_b. k3 would be an unbiased
  estimate of KL(vLLM || SGLang) only for tokens sampled from vLLM; these tokens are SGLang's
  greedy continuation, sampled from neither engine. So k3 here is a per-token divergence of the
  two logprobs of one given token: >= 0, exactly 0 iff they are bit-identical, about r^2 / 2 for
  small r, and its per-sample mean is SGLang's `avg_kl_div` arithmetic applied to these tokens.
  The distribution-level comparison is `union_kl` below.
- `top1_agree`: both engines' most likely next token is the same id.
- `topk_overlap`: |topA ∩ topB| / K; `top5_overlap` the same over each side's first 5 (K >= 5).
- `union_kl`: KL(vLLM || SGLang) over the union U of the two top-k sets plus the actual token.
  **Remainder mass**: the ids of U whose logprob *both* engines returned are kept as separate
  outcomes; everything else (the rest of the vocabulary, and any id of U that one engine did not
  report) is merged, on both sides, into one "other" bucket whose mass is 1 - sum of the kept
  probabilities of that side. kltui asks SGLang for the logprobs of vLLM's top-k ids
  (`token_ids_logprob`), so all of vLLM's top-k is kept; vLLM cannot report chosen ids at prompt
  positions, so an id in SGLang's top-k but outside vLLM's is folded into "other". The result is
  the KL of the two distributions coarse-grained to that partition: by the data-processing
  inequality a lower bound of the full-vocabulary KL, equal to it when the kept ids carry all
  the mass. Both "other" masses are floored at `REST_FLOOR` so that float32 rounding of the
  engines' logprobs (a top set summing to 1 + 1e-7) cannot turn into a spurious infinity, and the
  result is clipped at 0 for the same reason. `union_known` / `union_size` count kept ids.

**Flip margins**: at every top-1 disagreement (a "flip": both engines rank a token first, not the
same one), each side's top-1/top-2 margin in nats (`top_lp[:, 0] - top_lp[:, 1]`). A flip where
both margins are small (below `FLIP_MARGIN_LINE`, 0.7 nats) is what rounding noise does near a
tie and is expected; a flip where either engine was sure of its first choice (margin at or above
the line) cannot come from rounding-level differences and is counted as `across_line`, a failure.
The flip's margin is the larger of the two sides', since each side ranks its own token first.

For greedy generations, `first_token_mismatch` applies vLLM's own acceptance rule
(`tests/models/utils.py::check_logprobs_close`): walk both generations in lockstep; at the first
position where the ids differ, each side's token must be among the other side's logprobs at that
step (its top-k plus its own sampled token); the walk stops there, since the sequences diverge.

Per run, `cross_summary` gives max and mean |delta|, top-1 and top-5 agreement rates against the
vLLM-to-SGLang migration guide's line (>= 95% is "does not affect the task"), mean and max
union KL, and the first mismatch, as a `CrossFigures` (`kltui.metrics.cross_figures`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kltui.metrics.cross_figures import (
    At,
    CrossFigures,
    FirstMismatch,
    Flip,
    FlipMargins,
    GreedyMismatch,
)
from kltui.metrics.k3 import k3, log_ratio

AGREEMENT_LINE = 0.95  # the migration guide: top-1/top-5 agreement above 95% is acceptable
# A top-1 flip between tokens closer than this (nats, top-1 minus top-2 on each side) is a near
# tie that kernel rounding can tip; one across a wider margin is not noise.
FLIP_MARGIN_LINE = 0.7
MAX_LISTED_FLIPS = 64
REST_FLOOR = 1e-6


@dataclass(slots=True)
class Side:
    """One engine's logprob information at P scored positions.

    `top_ids`/`top_lp` are [P, K], sorted by descending logprob, padded with -1 / -inf.
    `extra_ids` [M] (sorted, unique) with `extra_lp` [P, M] are ids whose logprob the engine
    returned at every position (SGLang's `token_ids_logprob`); `pos_ids` [P, N] with `pos_lp`
    [P, N] are ids asked position by position (-1: none), which a reference that holds the
    whole vocabulary answers for the other side's top-k (`kltui.engines.hf`).
    """

    token_ids: np.ndarray
    lp: np.ndarray
    top_ids: np.ndarray
    top_lp: np.ndarray
    extra_ids: np.ndarray | None = None
    extra_lp: np.ndarray | None = None
    pos_ids: np.ndarray | None = None
    pos_lp: np.ndarray | None = None

    @property
    def k(self) -> int:
        """The number of top-k alternatives per position."""
        return int(self.top_ids.shape[1])


def lookup(side: Side, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logprob, known) of each id in `ids` [P, N] at its row's position, from what `side` holds."""
    ids = np.asarray(ids, dtype=np.int64)
    lp = np.full(ids.shape, np.nan)
    known = np.zeros(ids.shape, dtype=bool)
    if side.extra_ids is not None and side.extra_ids.size:
        j = np.clip(np.searchsorted(side.extra_ids, ids), 0, side.extra_ids.size - 1)
        hit = side.extra_ids[j] == ids
        lp = np.where(hit, np.take_along_axis(side.extra_lp, j, axis=1), lp)
        known |= hit
    if side.pos_ids is not None and side.pos_ids.size:
        eq = (ids[:, :, None] == side.pos_ids[:, None, :]) & (side.pos_ids[:, None, :] >= 0)
        hit = eq.any(axis=2)
        vals = np.take_along_axis(side.pos_lp, eq.argmax(axis=2), axis=1)
        lp = np.where(hit, vals, lp)
        known |= hit
    if side.k:
        eq = ids[:, :, None] == side.top_ids[:, None, :]
        hit = eq.any(axis=2)
        vals = np.take_along_axis(side.top_lp, eq.argmax(axis=2), axis=1)
        lp = np.where(hit, vals, lp)
        known |= hit
    # The actual token's own logprob is the most direct report: it wins over the tables.
    hit = ids == side.token_ids[:, None]
    lp = np.where(hit, side.lp[:, None], lp)
    known |= hit
    known &= ids >= 0
    return lp, known


def _overlap(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    eq = (a[:, :, None] == b[:, None, :]) & (a[:, :, None] >= 0)
    return eq.any(axis=2).sum(axis=1) / k


def _rest(lp: np.ndarray, use: np.ndarray) -> np.ndarray:
    """1 - sum(exp(lp[use])) per row, computed as -expm1(logsumexp) to keep small rests exact."""
    masked = np.where(use, lp, -np.inf)
    m = masked.max(axis=1, initial=-np.inf)
    finite = np.isfinite(m)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        s = np.where(use, np.exp(masked - np.where(finite, m, 0.0)[:, None]), 0.0).sum(axis=1)
        lse = np.where(finite, m + np.log(s), -np.inf)
        rest = -np.expm1(lse)
    return np.maximum(rest, REST_FLOOR)


@dataclass(slots=True)
class CrossPositions:
    """Per-position comparison of two engines' logprobs: deltas, k3, top-k agreement."""

    lp_a: np.ndarray
    lp_b: np.ndarray
    abs_delta: np.ndarray
    k3: np.ndarray
    top1_agree: np.ndarray  # bool [P]; all False when K == 0
    topk_overlap: np.ndarray  # [P]; NaN when K == 0
    top5_overlap: np.ndarray | None  # [P] when K >= 5
    union_kl: np.ndarray  # [P]
    union_known: np.ndarray  # int [P]
    union_size: np.ndarray  # int [P]
    flip: np.ndarray | None = None  # bool [P]: both sides rank a token first, not the same one
    margin_a: np.ndarray | None = None  # [P] top-1 minus top-2 logprob; NaN below K = 2
    margin_b: np.ndarray | None = None
    top1_a: np.ndarray | None = None  # int [P] each side's top-1 id (-1: none)
    top1_b: np.ndarray | None = None

    @property
    def n(self) -> int:
        """The number of compared positions."""
        return int(self.lp_a.size)

    def first_top1_disagreement(self) -> int | None:
        """The first position whose top-1 tokens differ, or None."""
        bad = ~self.top1_agree
        return int(np.argmax(bad)) if bad.any() else None


def top_margins(top_lp: np.ndarray) -> np.ndarray:
    """Per position, top-1 minus top-2 logprob (>= 0); NaN where fewer than two are finite."""
    top_lp = np.asarray(top_lp, dtype=np.float64)
    if top_lp.ndim != 2 or top_lp.shape[1] < 2:
        return np.full(top_lp.shape[0] if top_lp.ndim else 0, np.nan)
    with np.errstate(invalid="ignore"):
        m = top_lp[:, 0] - top_lp[:, 1]
    return np.where(np.isfinite(m), m, np.nan)


def flips(
    top_ids_a: np.ndarray, top_lp_a: np.ndarray, top_ids_b: np.ndarray, top_lp_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flip [P], margin_a [P], margin_b [P]) from two [P, K] top-k tables sorted by rank."""
    ia = np.asarray(top_ids_a)
    ib = np.asarray(top_ids_b)
    if ia.ndim != 2 or ib.ndim != 2 or not ia.shape[1] or not ib.shape[1]:
        p = ia.shape[0] if ia.ndim else 0
        return np.zeros(p, dtype=bool), np.full(p, np.nan), np.full(p, np.nan)
    flip = (ia[:, 0] >= 0) & (ib[:, 0] >= 0) & (ia[:, 0] != ib[:, 0])
    return flip, top_margins(top_lp_a), top_margins(top_lp_b)


def pairs_table(rows: list | None, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-position [(id, logprob), ...] lists (as events record top-k) as dense [p, K] ids and
    logprobs sorted by descending logprob, padded with -1 / -inf."""
    rows = list(rows or [])[:p]
    n = np.array([len(r) if r else 0 for r in rows] + [0] * (p - len(rows)), dtype=np.int64)
    k = int(n.max()) if n.size else 0
    ids = np.full((p, k), -1, dtype=np.int64)
    lp = np.full((p, k), -np.inf)
    if not k:
        return ids, lp
    flat = [e for r in rows if r for e in r]
    row = np.repeat(np.arange(p), n)
    col = np.arange(row.size) - np.repeat(np.cumsum(n) - n, n)
    ids[row, col] = [int(e[0]) for e in flat]
    lp[row, col] = [float(e[1]) for e in flat]
    order = np.argsort(-lp, axis=1, kind="stable")
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(lp, order, axis=1)


def cross_positions(a: Side, b: Side) -> CrossPositions:
    """Per-position cross-engine metrics; `a` is SGLang, `b` is vLLM, same positions and ids."""
    if not np.array_equal(a.token_ids, b.token_ids):
        raise ValueError("the two sides score different token ids")
    k = min(a.k, b.k)
    p = a.token_ids.size
    r = log_ratio(a.lp, b.lp)
    if k:
        top1 = (a.top_ids[:, 0] == b.top_ids[:, 0]) & (a.top_ids[:, 0] >= 0)
        overlap = _overlap(a.top_ids[:, :k], b.top_ids[:, :k], k)
    else:
        top1 = np.zeros(p, dtype=bool)
        overlap = np.full(p, np.nan)
    top5 = _overlap(a.top_ids[:, :5], b.top_ids[:, :5], 5) if k >= 5 else None

    cand = np.concatenate([a.token_ids[:, None], a.top_ids[:, :k], b.top_ids[:, :k]], axis=1)
    cand = np.sort(cand, axis=1)
    fresh = cand >= 0
    fresh[:, 1:] &= cand[:, 1:] != cand[:, :-1]
    lp_a, known_a = lookup(a, cand)
    lp_b, known_b = lookup(b, cand)
    use = fresh & known_a & known_b
    with np.errstate(invalid="ignore", over="ignore"):
        p_b = np.where(use, np.exp(np.where(use, lp_b, -np.inf)), 0.0)
        # 0 * log(0 / q) is 0; q == 0 with p > 0 is a genuine infinity.
        term = np.where(p_b > 0, p_b * (np.where(use, lp_b, 0.0) - np.where(use, lp_a, 0.0)), 0.0)
        rest_a = _rest(lp_a, use)
        rest_b = _rest(lp_b, use)
        kl = term.sum(axis=1) + rest_b * (np.log(rest_b) - np.log(rest_a))
    flip, margin_a, margin_b, top1_a, top1_b = _flip_fields(a, b, k)
    return CrossPositions(
        lp_a=np.asarray(a.lp, dtype=np.float64),
        lp_b=np.asarray(b.lp, dtype=np.float64),
        abs_delta=np.abs(r),
        k3=k3(a.lp, b.lp),
        top1_agree=top1,
        topk_overlap=overlap,
        top5_overlap=top5,
        union_kl=np.maximum(kl, 0.0),
        union_known=use.sum(axis=1),
        union_size=fresh.sum(axis=1),
        flip=flip,
        margin_a=margin_a,
        margin_b=margin_b,
        top1_a=top1_a,
        top1_b=top1_b,
    )


def _flip_fields(a: Side, b: Side, k: int) -> tuple:
    p = a.token_ids.size
    if not k:
        none = np.full(p, -1, dtype=np.int64)
        return np.zeros(p, dtype=bool), np.full(p, np.nan), np.full(p, np.nan), none, none
    flip, ma, mb = flips(a.top_ids, a.top_lp, b.top_ids, b.top_lp)
    return flip, ma, mb, a.top_ids[:, 0].astype(np.int64), b.top_ids[:, 0].astype(np.int64)


def flip_summary(
    samples: list[tuple[int, CrossPositions]], *, line: float = FLIP_MARGIN_LINE
) -> FlipMargins:
    """Every top-1 flip of a run with both sides' margins, and how many fall inside `line`."""
    parts = [(s, c) for s, c in samples if c.flip is not None and c.n]
    if not parts:
        return FlipMargins(line)
    flip = np.concatenate([c.flip for _, c in parts])
    if not flip.any():
        return FlipMargins(line)
    ma = np.concatenate([c.margin_a for _, c in parts])[flip]
    mb = np.concatenate([c.margin_b for _, c in parts])[flip]
    ida = np.concatenate([c.top1_a for _, c in parts])[flip]
    idb = np.concatenate([c.top1_b for _, c in parts])[flip]
    sample = np.concatenate([np.full(c.n, s, dtype=np.int64) for s, c in parts])[flip]
    pos = np.concatenate([np.arange(c.n, dtype=np.int64) for _, c in parts])[flip]
    both = np.fmax(ma, mb)  # NaN only where neither side has a second token
    known = ~np.isnan(both)

    def at(j: int) -> Flip:
        return Flip(int(sample[j]), int(pos[j]), int(ida[j]), int(idb[j]), _num(ma[j]), _num(mb[j]))

    widest = int(np.nanargmax(both)) if known.any() else None
    # the widest first: those are the ones to look at
    order = np.argsort(-np.where(known, both, -np.inf), kind="stable")[:MAX_LISTED_FLIPS]
    return FlipMargins(
        line,
        flips=int(flip.sum()),
        within_line=int((both[known] < line).sum()),
        across_line=int((both[known] >= line).sum()),
        margin_unknown=int((~known).sum()),
        max_margin=None if widest is None else float(both[widest]),
        median_margin=None if widest is None else float(np.median(both[known])),
        largest=None if widest is None else at(widest),
        listed=tuple(at(int(j)) for j in order),
    )


def _num(x) -> float | None:
    return None if np.isnan(x) else float(x)


def first_token_mismatch(
    ids_a: np.ndarray, ids_b: np.ndarray, top_a: np.ndarray, top_b: np.ndarray
) -> GreedyMismatch | None:
    """vLLM's check_logprobs_close rule on two greedy generations; None if they agree.

    `top_a`/`top_b` are each generation's [T, K] top-k ids at every step; a side's own sampled
    token counts as one of its logprobs, as in vLLM's per-step dicts.
    """
    n = min(ids_a.size, ids_b.size)
    diff = ids_a[:n] != ids_b[:n]
    if not diff.any():
        return None
    pos = int(np.argmax(diff))
    ta, tb = int(ids_a[pos]), int(ids_b[pos])
    a_in_b = bool(pos < top_b.shape[0] and ta in top_b[pos])
    b_in_a = bool(pos < top_a.shape[0] and tb in top_a[pos])
    return GreedyMismatch(pos, ta, tb, a_in_b, b_in_a, a_in_b and b_in_a)


def _rate(values: list[np.ndarray]) -> float | None:
    if not values:
        return None
    cat = np.concatenate(values)
    return float(np.nanmean(cat)) if cat.size else None


def cross_summary(
    samples: list[tuple[int, CrossPositions]],
    greedy: list[tuple[int, GreedyMismatch | None]] | None = None,
    *,
    k: int,
    line: float = AGREEMENT_LINE,
) -> CrossFigures:
    """Per-run cross-engine figures. `samples`: (sample index, positions) in scoring order;
    `greedy`: (sample index, first_token_mismatch result) where greedy generations were
    compared."""
    scored = [(s, c) for s, c in samples if c.n]
    figures = CrossFigures(
        top_k=k,
        agreement_line=line,
        positions=int(sum(c.n for _, c in scored)),
        flip_margins=flip_summary(scored),
    )
    if scored:
        figures = replace(figures, **_deltas(scored), **_agreement(scored, k, line))
    if greedy:
        figures = replace(figures, **_greedy(greedy))
    return figures


def _deltas(scored: list[tuple[int, CrossPositions]]) -> dict[str, Any]:
    """|Δlogprob| (max, where, mean) and union KL (mean, max, the share of kept ids)."""
    deltas = np.concatenate([c.abs_delta for _, c in scored])
    finite = np.where(np.isnan(deltas), -np.inf, deltas)
    i = int(np.argmax(finite))
    lengths = np.cumsum([0] + [c.n for _, c in scored])
    which = int(np.searchsorted(lengths, i, side="right") - 1)
    kl = np.concatenate([c.union_kl for _, c in scored])
    known = sum(int(c.union_known.sum()) for _, c in scored)
    size = sum(int(c.union_size.sum()) for _, c in scored)
    return {
        "max_abs_delta": float(deltas[i]),
        "max_abs_delta_at": At(scored[which][0], int(i - lengths[which])),
        "mean_abs_delta": float(np.nanmean(deltas)),
        "union_kl_mean": float(np.nanmean(kl)),
        "union_kl_max": float(np.nanmax(kl)),
        "union_coverage": known / size if size else None,
    }


def _agreement(scored: list[tuple[int, CrossPositions]], k: int, line: float) -> dict[str, Any]:
    """Top-1/top-5/top-k agreement rates, the first top-1 disagreement, and whether the rates
    hold the line."""
    top1 = _rate([c.top1_agree.astype(np.float64) for _, c in scored]) if k else None
    topk = _rate([c.topk_overlap for _, c in scored]) if k else None
    top5 = (
        _rate([c.top5_overlap for _, c in scored if c.top5_overlap is not None]) if k >= 5 else None
    )
    firsts = [(c.first_top1_disagreement(), s) for s, c in scored if k]
    known = [(p, s) for p, s in firsts if p is not None]
    first = None
    if known:
        p, s = min(known)
        first = At(s, p)
    rates = [r for r in (top1, top5 if k >= 5 else topk) if r is not None]
    ok = all(r >= line for r in rates) if len(rates) == 2 else None
    return {
        "top1_agreement": top1,
        "top5_agreement": top5,
        "topk_overlap": topk,
        "first_top1_disagreement": first,
        "agreement_ok": ok,
    }


def _greedy(greedy: list[tuple[int, GreedyMismatch | None]]) -> dict[str, Any]:
    """The greedy comparison: how many, how many identical, rule failures, the earliest."""
    mism = [(m.position, s, m) for s, m in greedy if m is not None]
    first = None
    if mism:
        _, s, m = min(mism, key=lambda t: (t[0], t[1]))
        first = FirstMismatch(s, m)
    return {
        "greedy_compared": len(greedy),
        "greedy_identical": len(greedy) - len(mism),
        "greedy_rule_failures": sum(1 for _, _, m in mism if not m.passed),
        "first_token_mismatch": first,
    }
