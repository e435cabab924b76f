"""A match whose divergence follows the reused cache (issue 57's audit): condition 2 on the
restore path, whichever helper shows it, never kernel noise; kinds and figures only."""

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import CachedDecode
from kltui.readings.findings import Finding
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleScored
from kltui.session.store import SessionStore

S = "http://127.0.0.1:1"


def store_of(**info) -> SessionStore:
    st = SessionStore()
    server = {"url": S, "engine": "sglang", **info}
    st.apply(RunStarted("r", 0.0, {"max_new_tokens": 16}, [server], {"max_len": 30}, "0"))
    return st


def feed(
    st: SessionStore, helper: str, cached: list[int], bad: set[int], noise=0.0, prompts=None
) -> None:
    """One finished helper: sample i reused cached[i] tokens of a prompts[i]-token input (30 by
    default); samples in `bad` differ by 0.5 from the first token on; `noise` adds
    rounding-size noise to every sample."""
    rng = np.random.default_rng(len(helper))
    st.apply(HelperStarted(helper, S, len(cached), 1e-3, 1e-3))
    book = ScoreBook()
    for i, c in enumerate(cached):
        b = -1 - rng.random(16) * 4
        a = b + (0.5 if i in bad else 0.0) + noise * rng.standard_normal(16)
        ids = np.arange(16)
        plen = 30 if prompts is None else prompts[i]
        book.add(i, ids, a, b, c, plen)
        st.apply(SampleScored(helper, S, i, ids, a, b, c, plen))
    summary = book.summary(n_samples=len(cached), n_skipped=0, threshold=1e-3)
    summary["status"] = "pass" if summary["passed"] else "fail"
    st.apply(HelperFinished(helper, S, summary))


# the audit's shape: BOS and a few tokens shared by every prompt (1-3 cached), the samples that
# reused 4 or more are exactly those that differ; the cache paths differ everywhere
CACHED = [0, 1, 1, 2, 1, 5, 7, 4, 1, 3, 5, 4, 1, 5, 8, 2]
BAD = {i for i, c in enumerate(CACHED) if c >= 4}


def test_match_differing_exactly_where_its_decode_reused_the_most_is_condition_2():
    st = store_of(enable_deterministic_inference=True)
    feed(st, "match", CACHED, BAD)
    feed(st, "prefill_cache_hit", [20] * 16, set(range(16)))
    feed(st, "decode_cache_hit", [40] * 16, set(range(16)))
    (d,) = diagnose(st)
    assert d.finding is Finding.RESTORE_STATE
    assert (d.condition, d.conditions, d.action) == (2, [2], None)
    split = next(e for e in d.evidence if isinstance(e, CachedDecode))
    assert (split.least, split.differing, split.cold) == (4, tuple(sorted(BAD)), 16 - len(BAD))
    assert d.basis.path("prefill_cache_hit").verdict == "state"
    assert d.headline.helpers == ("prefill_cache_hit", "decode_cache_hit")


def test_match_alone_decides_it_when_the_split_is_beyond_chance():
    cached = [0] * 16 + [6] * 8
    st = store_of(enable_deterministic_inference=True)
    feed(st, "match", cached, set(range(16, 24)))
    (d,) = diagnose(st)
    assert d.finding is Finding.RESTORE_STATE and d.condition == 2
    assert d.headline.samples == tuple(range(16, 24)) and d.headline.p < 2.5e-4


def test_a_split_that_chance_could_give_is_inconclusive_never_kernels():
    st = store_of(enable_deterministic_inference=True)
    feed(st, "match", [0, 0, 0, 5, 5, 0], {3, 4})
    (d,) = diagnose(st)
    assert d.finding is Finding.RESTORE_UNCLEAR and d.condition is None
    assert d.action is None and not d.kernels_shown


def test_noise_on_the_cold_samples_too_is_not_a_restore_bug():
    st = store_of(enable_deterministic_inference=False)
    feed(st, "match", CACHED, BAD, noise=1e-3)
    (d,) = diagnose(st)
    assert d.finding not in (Finding.RESTORE_STATE, Finding.RESTORE_UNCLEAR)


def test_a_divergence_where_nothing_was_reused_is_not_a_restore_bug():
    st = store_of(enable_deterministic_inference=True)
    feed(st, "match", [0] * 16, {1, 2, 3})
    (d,) = diagnose(st)
    assert d.finding not in (Finding.RESTORE_STATE, Finding.RESTORE_UNCLEAR)


def test_a_split_the_prompt_lengths_give_as_well_is_inconclusive():
    """The samples that reused the cache are also the longest prompts: noise whose chance grows
    with a sample's length would fall there too (bench/calibrate_splits.py: up to 0.9 % false
    condition 2 without this), so neither match nor a cache path decides condition 2."""
    cached = [0] * 16 + [6] * 8
    prompts = [20 + i for i in range(16)] + [60 + i for i in range(8)]
    st = store_of(enable_deterministic_inference=True)
    feed(st, "match", cached, set(range(16, 24)), prompts=prompts)
    feed(st, "decode_cache_hit", [40] * 24, set(range(24)), prompts=prompts)
    (d,) = diagnose(st)
    split = next(e for e in d.evidence if isinstance(e, CachedDecode))
    assert split.p < 2.5e-4 and split.confounded and split.p_length < 1e-3
    assert d.finding is Finding.RESTORE_UNCLEAR and d.condition is None
    assert d.action is None and not d.kernels_shown
