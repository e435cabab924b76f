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

from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState

# the share of its samples a helper must score to count as having tested its path
MIN_TESTED_FRACTION = 0.5
UNUSABLE = ("error", "invalid", "vacuous")


def min_scored(samples: int) -> int:
    """The fewest scored samples that count as a test of a path given `samples` prompts."""
    return max(1, math.ceil(MIN_TESTED_FRACTION * max(samples, 0)))


def untested(st: HelperState) -> str | None:
    """Why this helper's result says nothing about its path (None: it tested it)."""
    s = st.summary
    if s is None:
        return "did not finish"
    if s.status in UNUSABLE:
        why = s.reason or s.error or ""
        word = "ran but compared nothing" if s.status == "vacuous" else s.status
        return f"{word}{': ' + why if why else ''}"
    view = HelperView.of(st)
    scored, samples = view.scored, view.samples
    if not scored:
        return f"no sample scored of {samples}"
    need = min_scored(samples)
    if scored < need:
        return (
            f"only {scored} of {samples} samples scored (at least {need} needed to count as "
            "a test of its path)"
        )
    return None


def tested(st: HelperState) -> bool:
    """The helper tested its path (see `untested`)."""
    return untested(st) is None
