"""Whether a finished helper tested its path at all: the one rule behind "not tested".

A helper that errored, was vacuous, scored no sample or scored too few of the samples it was
given says nothing about its path, so it never counts towards "bit-identical", "conditions 1
and 2 hold", a fleet's grouping or a cross-server "identical". The bar is SGLang's own
min_cache_hit_ratio default (half of the samples): below it a cache path is what SGLang's
helpers would fail as "too few cache hits", and kltui's verdicts rest on no less, whatever
`--min-cache-hit-ratio` or SGLANG_TEST_SKIP_CACHE_HIT_ASSERT let the gate accept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import numpy as np

from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState

# the share of its samples a helper must score to count as having tested its path
MIN_TESTED_FRACTION = 0.5
UNUSABLE = ("error", "invalid", "vacuous")


def min_scored(samples: int) -> int:
    """The fewest scored samples that count as a test of a path given `samples` prompts."""
    return max(1, math.ceil(MIN_TESTED_FRACTION * max(samples, 0)))


class NotTested(StrEnum):
    """Why a helper's result says nothing about its path."""

    NOT_RUN = "did not run"  # no result at all (a path the diagnosis needs, an ablation's)
    UNFINISHED = "did not finish"
    UNUSABLE = "unusable"  # errored, invalid, or vacuous (ran but compared nothing)
    NONE_SCORED = "no sample scored"
    FEW_SCORED = "too few scored"
    STARVED = "starved"  # cache hits much shorter than the base's on the same prompts


@dataclass(frozen=True)
class Untested:
    """A helper that did not test its path: the kind and what it rests on
    (`words/coverage.untested_words` says it)."""

    kind: NotTested
    scored: int = 0
    samples: int = 0
    status: str = ""  # UNUSABLE: the summary's status (error, invalid, vacuous)
    detail: str = ""  # UNUSABLE: the helper's own recorded reason or error
    need: int = 0  # FEW_SCORED: the fewest scored samples that count as a test
    short: int = 0  # STARVED: the samples whose hit was a quarter of the base's or less
    cached: tuple[int, int] = (0, 0)  # STARVED: their cached tokens, fewest and most
    base_cached: tuple[int, int] = (0, 0)  # STARVED: the base's on the same prompts


NOT_RUN = Untested(NotTested.NOT_RUN)


def coverage_of(st: HelperState) -> Untested | None:
    """Why this helper's result says nothing about its path (None: it tested it)."""
    s = st.summary
    if s is None:
        return Untested(NotTested.UNFINISHED)
    view = HelperView.of(st)
    scored, samples = view.scored, view.samples
    if s.status in UNUSABLE:
        detail = s.reason or s.error or ""
        return Untested(NotTested.UNUSABLE, scored, samples, s.status, detail)
    if not scored:
        return Untested(NotTested.NONE_SCORED, 0, samples)
    need = min_scored(samples)
    if scored < need:
        return Untested(NotTested.FEW_SCORED, scored, samples, need=need)
    return None


# a configuration's cache hit this much shorter than the base's on the same prompt restores
# too little of the prefix to test the path the base tested
STARVED_SHARE = 0.25


def starved(st: HelperState, base: HelperState) -> Untested | None:
    """A cache-hit helper whose hits are much shorter than the base's on the same prompts
    (at most a quarter of the base's cached tokens) in at least half of the samples both
    scored: it scored, but restored too little of the prefix to say anything about the path
    the base tested (a knob that starves the cache, `--max-total-tokens` too small). None when
    the helper hit as the base did, or neither records cached tokens."""
    common = [i for i in st.book.order if i in base.book.samples]
    if not common:
        return None
    mine = np.array([st.book.samples[i].cached_tokens for i in common], dtype=np.int64)
    theirs = np.array([base.book.samples[i].cached_tokens for i in common], dtype=np.int64)
    short = (theirs > 0) & (mine <= STARVED_SHARE * theirs)
    n = int(short.sum())
    if n == 0 or n < min_scored(len(common)):
        return None
    return Untested(
        NotTested.STARVED,
        len(common),
        len(common),
        short=n,
        cached=_span(mine[short]),
        base_cached=_span(theirs[short]),
    )


def _span(a: np.ndarray) -> tuple[int, int]:
    """The fewest and most cached tokens over some samples."""
    return int(a.min()), int(a.max())


def tested(st: HelperState) -> bool:
    """The helper tested its path (see `coverage_of`)."""
    return coverage_of(st) is None


@dataclass(frozen=True)
class PageMisses:
    """Every skipped sample of a cache helper is the radix cache's page rounding: `n` skipped,
    the page size; for decode_cache_hit the tokens generated and the cached_tokens seen."""

    helper: str
    n: int
    page: int
    new_tokens: int | None = None
    seen: tuple[int, ...] = ()


def page_misses(st: HelperState, page: int | None, new_tokens: int | None) -> PageMisses | None:
    """Why a cache-hit helper's skipped samples missed, when every one of them is the radix
    cache's page rounding as measured (cached_tokens a whole number of pages, and for a
    prefill hit a prompt no longer than one page); None when that is not what was measured."""
    rows = list(st.skipped_tokens.values())
    if not page or page <= 1 or not rows or any(i <= 0 for _, i in rows):
        return None
    if any(c % page for c, _ in rows):
        return None
    n = len(rows)
    if st.helper == "prefill_cache_hit":
        if any(c or i > page for c, i in rows):
            return None
        return PageMisses(st.helper, n, page)
    if st.helper == "decode_cache_hit" and new_tokens is not None and new_tokens < 2 * page:
        seen = tuple(sorted({c for c, _ in rows}))
        return PageMisses(st.helper, n, page, new_tokens, seen)
    return None


@dataclass(frozen=True)
class PoolShort:
    """A cache-hit helper's misses where its hit requests' inputs, all warmed before the first
    hit, hold more tokens than the server's KV pool: the radix cache (LRU) can evict the
    earliest before their turn. Measured: the pool the server reported and the tokens sent."""

    kind: Literal["kv-pool-short"]
    helper: str
    missed: int
    samples: int
    pool_tokens: int
    input_tokens: int
    fit: int  # samples of this run's mean input length the pool holds at once


def pool_misses(st: HelperState) -> PoolShort | None:
    """The helper missed hits, and its hit requests' inputs together exceed the server's KV
    pool (both recorded by the helper); None when either is unknown, or they fit."""
    s = st.summary
    if s is None or not st.skipped_tokens:
        return None
    pool, asked, samples = s.kv_pool_tokens, s.hit_input_tokens, s.samples
    if not pool or not asked or not samples or asked <= pool:
        return None
    mean = asked / samples
    return PoolShort(
        "kv-pool-short", st.helper, len(st.skipped_tokens), samples, pool, asked,
        max(1, int(pool // mean)),
    )  # fmt: skip
