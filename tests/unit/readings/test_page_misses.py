"""Why a cache path's samples missed, read from what the misses measured (cached_tokens and
the request's input length), never guessed: the radix cache's page rounding."""

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.readings.coverage import PageMisses, page_misses
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import PageNote, StepKind
from kltui.session.events import (
    HelperFinished,
    HelperStarted,
    RunStarted,
    SampleScored,
    SampleSkipped,
)
from kltui.session.store import SessionStore
from kltui.words.diagnosis import said
from tests.unit.readings.test_diagnosis_verdicts import exact_rows, feed_rows

S = "http://127.0.0.1:1"


def skipped_state(helper: str, rows: list[tuple[int, int]], new: int = 8, page: int = 16):
    st = SessionStore()
    server = {"url": S, "engine": "sglang", "page_size": page}
    st.apply(RunStarted("r", 0.0, {"max_new_tokens": new}, [server], {"max_len": 30}, "0"))
    st.apply(HelperStarted(helper, S, len(rows), 1e-9, 1e-9))
    for i, (cached, inp) in enumerate(rows):
        st.apply(SampleSkipped(helper, S, i, "miss", cached, inp))
    return st


def test_decode_misses_on_whole_pages_name_the_page_size_and_the_fix():
    st = skipped_state("decode_cache_hit", [(32, 49), (0, 14), (32, 49)])
    hint = page_misses(st.helpers[f"decode_cache_hit@{S}"], 16, 8)
    assert hint == PageMisses("decode_cache_hit", 3, 16, new_tokens=8, seen=(0, 32))


def test_prefill_misses_of_prompts_within_a_page():
    st = skipped_state("prefill_cache_hit", [(0, 5), (0, 16)])
    hint = page_misses(st.helpers[f"prefill_cache_hit@{S}"], 16, 8)
    assert hint == PageMisses("prefill_cache_hit", 2, 16)


def test_no_hint_where_the_measurement_does_not_show_page_rounding():
    # page size 1; a cached count that is no whole page; a prompt longer than a page with no
    # hit; an input length not reported (an older recording); enough generated tokens
    cases = [
        ("decode_cache_hit", [(32, 49)], 1, 8),
        ("decode_cache_hit", [(33, 49)], 16, 8),
        ("prefill_cache_hit", [(0, 40)], 16, 8),
        ("decode_cache_hit", [(32, 0)], 16, 8),
        ("decode_cache_hit", [(32, 49)], 16, 32),
    ]
    for helper, rows, page, new in cases:
        st = skipped_state(helper, rows, new, page)
        assert page_misses(st.helpers[f"{helper}@{S}"], page, new) is None, (helper, rows)


def test_bit_identical_where_compared_but_a_gate_failed_says_so():
    """Every compared sample exact, prefill_cache_hit's gate failed on too few hits: not a
    plain "conditions 1 and 2 hold"; the page hint says why the misses happened."""
    rng = np.random.default_rng(0)
    st = SessionStore()
    server = {"url": S, "engine": "sglang", "page_size": 16}
    st.apply(RunStarted("r", 0.0, {"max_new_tokens": 32}, [server], {"max_len": 30}, "0"))
    feed_rows(st, "match", exact_rows(rng, 32))
    feed_rows(st, "decode_cache_hit", exact_rows(rng, 32))
    st.apply(HelperStarted("prefill_cache_hit", S, 32, 1e-9, 1e-9))
    for i in range(16):
        st.apply(SampleSkipped("prefill_cache_hit", S, i, "prefill cache miss", 0, 5))
    feed = exact_rows(rng, 16)
    book = ScoreBook()
    for j, (a, b) in enumerate(feed, start=16):
        ids = np.arange(a.size)
        book.add(j, ids, a, b, 16, 40)
        st.apply(SampleScored("prefill_cache_hit", S, j, ids, a, b, 16, 40))
    summary = book.summary(n_samples=32, n_skipped=16, threshold=1e-9)
    summary |= {"status": "fail", "hit_failure": "Too few prefill cache hits 16/32 (need > 16)"}
    st.apply(HelperFinished("prefill_cache_hit", S, summary))
    (d,) = diagnose(st)
    assert d.condition == 0, said(d).label
    assert d.headline.partial, said(d).label  # conditions 1 and 2 hold on the samples compared
    fails = (("prefill_cache_hit", "Too few prefill cache hits 16/32 (need > 16)"),)
    assert d.headline.fails == fails, said(d).label  # but prefill_cache_hit fails its gate
    assert d.step is not None and d.step.kind is StepKind.EXACT_MISSED, said(d).next_step
    notes = [e.misses for e in d.evidence if isinstance(e, PageNote)]
    assert notes == [PageMisses("prefill_cache_hit", 16, 16)], said(d).evidence
