"""Verdicts that never claim more than the evidence (issue 18): the primary condition, the
paired test under sample-level heterogeneity, n too small, temperature, non-finite logprobs,
the stray-ulp floor in every branch, and wording that is true."""

import json

import numpy as np
import pytest

from kltui.metrics.k3 import ScoreBook
from kltui.readings.coverage import NotTested, Untested
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import (
    Command,
    CommandKind,
    Noise,
    Nonfinite,
    Onset,
    OnsetKind,
    PageResidues,
    PairedLine,
    StepKind,
)
from kltui.readings.findings import Finding
from kltui.readings.paired import EVIDENCE_P
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleScored
from kltui.session.store import SessionStore
from kltui.words.diagnosis import said, to_json

S = "http://127.0.0.1:1"
HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")


def started(store: SessionStore, temperature: float = 0.0, **info) -> None:
    server = {"url": S, "engine": "sglang", **info}
    cfg = {"max_new_tokens": 16, "temperature": temperature}
    store.apply(RunStarted("r", 0.0, cfg, [server], {"max_len": 30}, "0"))


def feed_rows(
    store: SessionStore,
    helper: str,
    rows: list[tuple[np.ndarray, np.ndarray]],
    prompt_len: int = 30,
    cached: int = 5,
) -> None:
    """One finished helper from explicit (lp_a, lp_b) rows, one per sample."""
    store.apply(HelperStarted(helper, S, len(rows), 1e-3, 1e-3))
    book = ScoreBook()
    for i, (a, b) in enumerate(rows):
        ids = np.arange(a.size)
        book.add(i, ids, a, b, cached, prompt_len)
        store.apply(SampleScored(helper, S, i, ids, a, b, cached, prompt_len))
    summary = book.summary(n_samples=len(rows), n_skipped=0, threshold=1e-3)
    summary["status"] = "pass" if summary["passed"] else "fail"
    store.apply(HelperFinished(helper, S, summary))


def noisy_rows(rng, scales, lengths, start=0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per sample, lp_a - lp_b ~ N(0, scale) from `start` on."""
    rows = []
    for s, n in zip(scales, lengths, strict=True):
        b = -1 - rng.random(n) * 4  # a logprob is <= 0 on both sides, noise and all
        a = b.copy()
        a[start:] += s * rng.standard_normal(n - start)
        rows.append((a, b))
    return rows


def exact_rows(rng, n: int, length: int = 16):
    rows = []
    for _ in range(n):
        b = -1 - rng.random(length) * 4
        rows.append((b.copy(), b))
    return rows


def text_of(d) -> str:
    return json.dumps(to_json(d))


def test_cache_helper_orders_above_a_passing_match_is_condition_2_first():
    """window-evict with default kernels: match ~6e-13, decode_cache_hit ~0.69."""
    rng = np.random.default_rng(0)
    st = SessionStore()
    started(st, enable_deterministic_inference=False)
    lengths = [48] * 16
    feed_rows(st, "match", noisy_rows(rng, [1.1e-6] * 16, lengths))
    feed_rows(st, "prefill_cache_hit", noisy_rows(rng, [1.1e-6] * 16, lengths))
    feed_rows(st, "decode_cache_hit", noisy_rows(rng, [1.2] * 16, lengths, start=4))
    (d,) = diagnose(st)
    assert d.condition == 2 and d.conditions == [1, 2], said(d).label
    assert (
        d.finding is Finding.STATE_BUG_FIRST and d.basis.path("decode_cache_hit").verdict == "state"
    )
    assert d.step is not None and d.step.kind is StepKind.CONDITION2  # isolate the trigger
    assert d.step.then is None or d.step.then.kind is not StepKind.RELAUNCH_DETERMINISTIC
    # a second server beside this one on match and the failing path (its words: golden)
    assert d.command == Command(CommandKind.CROSS_CHECK, S, ("match", "decode_cache_hit"))
    assert d.action is None


def _null(seed: int, n: int, sigma: float = 1.0, shift: float = 1.0, one_bad: float = 0.0):
    """match and both cache helpers with the same noise process; each sample's noise scale is
    drawn lognormal(sigma) per helper, lengths spread 16..256."""
    rng = np.random.default_rng(seed)
    st = SessionStore()
    started(st, enable_deterministic_inference=True)
    lengths = rng.integers(16, 257, n)
    base = 2e-2
    for h in HELPERS:
        scales = base * np.exp(sigma * rng.standard_normal(n))
        if h == "decode_cache_hit":
            scales = scales * np.sqrt(shift)  # k3 ~ scale**2 / 2
            if one_bad:
                scales[0] *= one_bad
        feed_rows(st, h, noisy_rows(rng, scales, lengths))
    (d,) = diagnose(st)
    return d


def test_heterogeneous_sample_scales_are_not_a_state_bug():
    """Token tails are not exchangeable across samples; the paired test over samples is."""
    flagged = [s for s in range(60) if 2 in _null(s, 32).conditions]
    assert flagged == []


def test_one_sample_with_three_times_the_noise_is_not_a_state_bug():
    for seed in range(10):
        d = _null(seed, 32, sigma=0.0, one_bad=3.0)
        assert d.conditions == [1], said(d).label


def test_a_small_systematic_shift_is_not_a_state_bug_at_large_n():
    """decode_cache_hit's longer contexts shift its noise a little: expected, not a bug."""
    d = _null(3, 128, sigma=0.05, shift=1.3)
    assert d.conditions == [1], said(d).evidence
    noise = [e.paired.helper for e in d.evidence if isinstance(e, Noise)]  # within the drift
    assert noise == ["decode_cache_hit"], said(d).evidence


def test_too_few_samples_is_inconclusive_not_no_more_than_match():
    rng = np.random.default_rng(1)
    st = SessionStore()
    started(st, enable_deterministic_inference=False)
    feed_rows(st, "match", noisy_rows(rng, [1e-3] * 8, [32] * 8))
    feed_rows(st, "prefill_cache_hit", noisy_rows(rng, [3e-2] * 8, [32] * 8))  # ~1000x
    (d,) = diagnose(st)
    assert d.finding is Finding.TOO_FEW_COMMON, said(d).label
    assert d.condition is None and d.headline.n == 8
    step = d.step
    assert step is not None and (step.kind, step.samples) == (StepKind.TOO_FEW, 32)


def test_temperature_above_zero_gives_no_kernel_verdict():
    rng = np.random.default_rng(2)
    st = SessionStore()
    started(st, temperature=0.7, enable_deterministic_inference=True)
    for h in HELPERS:
        feed_rows(st, h, noisy_rows(rng, [0.1] * 12, [32] * 12))
    (d,) = diagnose(st)
    assert d.condition is None and d.conditions == []
    assert d.finding is Finding.SAMPLING and d.headline.temperature == 0.7
    assert "dumps" not in text_of(d).replace("--temperature", "")
    assert said(d).next_command is None and d.action is None


def test_non_finite_logprobs_on_both_sides_are_their_own_finding():
    rng = np.random.default_rng(3)
    st = SessionStore()
    rows = exact_rows(rng, 12)
    for a, b in rows[:2]:
        a[[3, 7]] = b[[3, 7]] = np.nan
    rows[2][0][5] = rows[2][1][5] = np.inf
    feed_rows(st, "match", rows)
    feed_rows(st, "prefill_cache_hit", exact_rows(rng, 12))
    feed_rows(st, "decode_cache_hit", exact_rows(rng, 12))
    (d,) = diagnose(st)
    assert d.finding is Finding.EXACT and d.condition == 0, said(d).label
    assert d.headline.nonfinite == ("match",) and d.headline.cold is None
    (line,) = [e for e in d.evidence if isinstance(e, Nonfinite)]
    assert line == Nonfinite("match", ((0, (3, 7)), (1, (3, 7)), (2, (5,))))


def test_one_ulp_blip_with_match_exact_is_not_condition_2():
    rng = np.random.default_rng(4)
    st = SessionStore()
    feed_rows(st, "match", exact_rows(rng, 12))
    rows = exact_rows(rng, 12)
    a = rows[0][0]
    a[3] = np.nextafter(a[3], 0.0)
    feed_rows(st, "prefill_cache_hit", rows)
    (d,) = diagnose(st)
    assert d.conditions == [1] and 2 not in d.conditions, said(d).label
    assert d.finding is Finding.STRAY_ULPS


def test_every_helper_still_diverges_only_when_every_one_does():
    rng = np.random.default_rng(5)
    st = SessionStore()
    started(st, enable_deterministic_inference=True)
    # 32 samples: at 12 a state bug on every sample at x10 is found in too few new runs for
    # the limit to be stated, and the reading is "not excluded" (readings/limit.py)
    feed_rows(st, "match", noisy_rows(rng, [2e-2] * 32, [32] * 32))
    feed_rows(st, "prefill_cache_hit", exact_rows(rng, 32, 32))
    feed_rows(st, "decode_cache_hit", noisy_rows(rng, [2e-2] * 32, [32] * 32))
    (d,) = diagnose(st)
    assert d.conditions == [1]
    # match and decode_cache_hit still diverge, prefill_cache_hit is exact: not "every helper"
    assert d.finding is Finding.DETERMINISTIC_SHAPE, said(d).label
    assert (d.headline.helpers, d.headline.others) == (
        ("decode_cache_hit",),
        ("prefill_cache_hit",),
    )


def test_untested_paths_are_never_part_of_conditions_hold():
    """Issue 28 item 4: a vacuous or errored cache helper is "not tested", never counted."""
    rng = np.random.default_rng(6)
    st = SessionStore()
    feed_rows(st, "match", exact_rows(rng, 12))
    st.apply(HelperStarted("prefill_cache_hit", S, 12, 1e-3, 1e-3))
    st.apply(HelperFinished("prefill_cache_hit", S, {"status": "vacuous", "scored": 0}))
    st.apply(HelperStarted("decode_cache_hit", S, 12, 1e-3, 1e-3))
    st.apply(HelperFinished("decode_cache_hit", S, {"status": "error", "error": "boom"}))
    (d,) = diagnose(st)
    assert d.condition is None and d.conditions == [], said(d).label
    assert d.finding is Finding.EXACT_WHERE_TESTED and d.headline.helpers == ("match",)
    assert dict(d.basis.untested) == {
        "prefill_cache_hit": Untested(NotTested.UNUSABLE, 0, 12, "vacuous"),
        "decode_cache_hit": Untested(NotTested.UNUSABLE, 0, 12, "error", "boom"),
    }
    assert [(t.helper, t.scored, t.samples) for t in d.basis.tested] == [("match", 12, 12)]


def test_page_evidence_is_the_prompt_partial_page_not_cached_tokens():
    rng = np.random.default_rng(7)
    st = SessionStore()
    started(st, page_size=4)
    feed_rows(st, "match", exact_rows(rng, 12))
    rows = noisy_rows(rng, [0.3] * 3, [16] * 3) + exact_rows(rng, 9)
    feed_rows(st, "prefill_cache_hit", rows, prompt_len=30, cached=28)
    (d,) = diagnose(st)
    # 3 differing samples of 12 against match's 12 exact: shared noise, a sample at a time,
    # misses match that way with chance C(12,3)/C(24,3) = 0.11: no state bug is claimed, the
    # evidence still reads the page remainder
    assert d.condition is None and d.finding is Finding.STATE_UNCLEAR, said(d).label
    assert d.headline.p == pytest.approx(0.1087, abs=1e-4)  # C(12,3)/C(24,3)
    assert d.basis.path(d.basis.tested[-1].helper).p is not None
    # the page remainder read is the prompt's (prompt_len % page size), not cached_tokens'
    (page,) = [e for e in d.evidence if isinstance(e, PageResidues)]
    assert page == PageResidues("prefill_cache_hit", 4, (2,), (2,)), said(d).evidence


def test_pure_noise_is_never_state_wrong_at_position_0():
    """match exact, a cache helper with rounding-level noise from its first token."""
    rng = np.random.default_rng(8)
    st = SessionStore()
    feed_rows(st, "match", exact_rows(rng, 12, 32))
    feed_rows(st, "decode_cache_hit", noisy_rows(rng, [1e-4] * 12, [32] * 12))
    (d,) = diagnose(st)
    (onset,) = [e for e in d.evidence if isinstance(e, Onset)]  # never "already wrong"
    assert onset.onset is OnsetKind.FIRST_ROUNDING, said(d).evidence


def test_pass_at_rounding_level_is_far_below_the_gate_not_a_relaunch():
    rng = np.random.default_rng(9)
    st = SessionStore()
    started(st, enable_deterministic_inference=False)
    for h in HELPERS:
        feed_rows(st, h, noisy_rows(rng, [1.4e-6] * 12, [32] * 12))  # avg_kl_div ~1e-12
    (d,) = diagnose(st)
    assert d.condition == 1
    step = d.step
    assert step is not None and step.kind is StepKind.NOTHING_TO_FIX, said(d).next_step
    assert step.deterministic is False and step.level is not None and step.level < step.gate


def test_too_few_samples_at_rounding_level_never_say_no_more_than_match():
    rng = np.random.default_rng(10)
    st = SessionStore()
    started(st, enable_deterministic_inference=False)
    feed_rows(st, "match", noisy_rows(rng, [1.4e-6] * 8, [32] * 8))
    feed_rows(st, "prefill_cache_hit", noisy_rows(rng, [1.4e-6] * 8, [32] * 8))
    (d,) = diagnose(st)
    # 8 samples: no state bug of any size would be found reliably, so none is ruled out
    assert d.condition is None and d.finding is Finding.NOT_EXCLUDED, said(d).label
    assert [lim.k for lim in d.limits] == [None]
    step = d.step  # more samples, --repeat or --stress
    assert step is not None and (step.kind, step.samples) == (StepKind.NOT_EXCLUDED, 128)


def vacuous(store: SessionStore, helper: str, n: int = 12) -> None:
    store.apply(HelperStarted(helper, S, n, 1e-3, 1e-3))
    store.apply(
        HelperFinished(helper, S, {"status": "vacuous", "scored": 0, "reason": "radix cache off"})
    )


def test_rounding_noise_with_cache_paths_that_compared_nothing_is_no_nothing_to_fix():
    """Radix cache off: match passes at rounding level, both cache helpers are vacuous (the run
    fails on them). Neither "nothing to fix for the gate" nor "run the cache-hit helpers"."""
    rng = np.random.default_rng(11)
    st = SessionStore()
    started(st, enable_deterministic_inference=False)
    feed_rows(st, "match", noisy_rows(rng, [1.4e-6] * 12, [32] * 12))
    vacuous(st, "prefill_cache_hit")
    vacuous(st, "decode_cache_hit")
    (d,) = diagnose(st)
    step = d.step
    assert step is not None and step.kind is StepKind.NOTHING_TO_FIX_UNCOVERED, said(d).next_step
    assert step.helpers == ("prefill_cache_hit", "decode_cache_hit")  # ran and tested nothing
    assert d.finding is Finding.CACHE_NOT_TESTED, said(d).label  # whether a state bug hides
    assert d.headline.others == ("prefill_cache_hit", "decode_cache_hit")  # ran, tested nothing


def test_rounding_noise_with_cache_helpers_not_asked_for_is_nothing_to_fix():
    """The same match alone (--helpers match): nothing ran untested, the old reading stands."""
    rng = np.random.default_rng(11)
    st = SessionStore()
    started(st, enable_deterministic_inference=False)
    feed_rows(st, "match", noisy_rows(rng, [1.4e-6] * 12, [32] * 12))
    (d,) = diagnose(st)
    step = d.step
    assert step is not None and step.kind is StepKind.NOTHING_TO_FIX, said(d).next_step
    # the cache helpers were not asked for: "run the cache-hit helpers"
    assert d.finding is Finding.CACHE_NOT_TESTED and d.headline.others == ()


def rows_with_means(rng, means, length: int = 32) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per sample a delta of constant size and alternating sign whose mean k3 is ~`means[i]`
    (k3(r) ~ r^2 / 2 at these sizes)."""
    rows = []
    sign = np.where(np.arange(length) % 2 == 0, 1.0, -1.0)
    for m in means:
        b = -1 - rng.random(length) * 4
        rows.append((b + sign * np.sqrt(2 * m), b))
    return rows


def test_a_broad_excess_short_of_the_drift_bar_is_not_read_as_a_few_samples():
    """decode_cache_hit above match in 28 of 32 samples, typically ~x9, with a wide per-sample
    spread (the audit's kv-corrupt-after case had 29 of 32, x9.5): the signed-rank test is far
    below the bar, the x3-drift test is not, and the helper fails its gate. Inconclusive, worded
    as the broad shift it is (not "a state bug in a few samples"), decided by more samples."""
    draws = np.random.default_rng(0)
    for _ in range(3):  # the third draw of this stream is the case (checked below)
        base = np.exp(draws.normal(-9, 1.0, 32))
        ratio = np.exp(draws.normal(np.log(9), 1.6, 32))
    rng = np.random.default_rng(12)
    st = SessionStore()
    started(st, enable_deterministic_inference=True)
    feed_rows(st, "match", rows_with_means(rng, base))
    feed_rows(st, "prefill_cache_hit", rows_with_means(rng, base))
    feed_rows(st, "decode_cache_hit", rows_with_means(rng, base * ratio))
    (d,) = diagnose(st)
    v = next(
        e.paired
        for e in d.evidence
        if isinstance(e, PairedLine) and e.paired.helper == "decode_cache_hit"
    )
    assert (v.higher, v.lower) == (28, 4) and v.tail_p == pytest.approx(0.3, abs=0.005), v
    assert d.condition is None and d.finding is Finding.BROAD_EXCESS, said(d).label
    paired = d.headline.paired
    assert d.headline.failing == ("decode_cache_hit",), said(d).label
    assert paired is not None and (paired.helper, paired.n, paired.higher) == (
        "decode_cache_hit",
        32,
        28,
    )
    assert paired.shift_p > EVIDENCE_P  # not beyond a x3 drift: the broad excess, not a few samples
    step = d.step
    assert step is not None and step.kind is StepKind.BROAD_EXCESS, said(d).next_step
    assert step.samples == 128  # more samples decide the shift
