"""The diagnosis reads exact zeros, per-sample evidence and the server's own settings."""

import numpy as np
import pytest

from kltui.metrics.k3 import ScoreBook
from kltui.readings.compare import NotComparable, rerun_equality
from kltui.readings.coverage import NOT_RUN, Untested
from kltui.readings.coverage import NotTested as Why
from kltui.readings.diagnosis import bit_identical, diagnose
from kltui.readings.diagnosis_parts import (
    Command,
    CommandKind,
    NotTested,
    Onset,
    OnsetKind,
    PairedLine,
    Settings,
    StepKind,
    Suspect,
    SuspectKind,
)
from kltui.readings.evidence import signed_rank_p
from kltui.readings.findings import Finding
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleScored
from kltui.session.store import SessionStore
from kltui.words.diagnosis import said

S = "http://127.0.0.1:1"


def started(store: SessionStore, **info) -> None:
    server = {"url": S, "engine": "sglang", **info}
    store.apply(RunStarted("r", 0.0, {"max_new_tokens": 16}, [server], {"max_len": 30}, "0"))


def feed(
    store: SessionStore,
    helper: str,
    noise: float,
    start: int = 0,
    n: int = 12,
    length: int = 16,
    seed: int | None = None,
    server: str = S,
) -> None:
    """`noise` is the std of lp_a - lp_b (k3 ~ noise**2 / 2); the same seed gives the same
    per-token values, as two helpers that take the same path would."""
    store.apply(HelperStarted(helper, server, n, 1e-3, 1e-3))
    book = ScoreBook()
    rng = np.random.default_rng(len(helper) if seed is None else seed)
    for i in range(n):
        b = -1 - rng.random(length) * 4
        a = b.copy()
        a[start:] += noise * rng.standard_normal(length - start)
        book.add(i, np.arange(length), a, b, 5, 30)
        store.apply(SampleScored(helper, server, i, np.arange(length), a, b, 5, 30))
    summary = book.summary(n_samples=n, n_skipped=0, threshold=1e-3)
    summary["status"] = "pass" if summary["passed"] else "fail"
    store.apply(HelperFinished(helper, server, summary))


def sigma(level: float) -> float:
    return (2 * level) ** 0.5


def steps(d) -> list[StepKind]:
    """The kinds of the next step and of every step after it."""
    out, step = [], d.step
    while step is not None:
        out.append(step.kind)
        step = step.then
    return out


def test_all_exact():
    st = SessionStore()
    for h in ("match", "prefill_cache_hit", "decode_cache_hit"):
        feed(st, h, 0.0)
    (d,) = diagnose(st)
    assert (d.condition, d.conditions, d.kind) == (0, [], "exact")
    assert said(d).next_step is None


def test_exact_but_a_path_untested_says_so():
    st = SessionStore()
    feed(st, "match", 0.0)
    (d,) = diagnose(st)
    assert d.condition is None and d.conditions == [], said(d).label
    assert d.finding is Finding.EXACT_WHERE_TESTED, said(d).label
    assert [t.helper for t in d.basis.tested] == ["match"]
    assert d.basis.untested.get("prefill_cache_hit") == NOT_RUN


def test_condition_1_noise_everywhere_advises_deterministic_only_when_off():
    st = SessionStore()
    started(st, enable_deterministic_inference=False, attention_backend="fa3")
    for h in ("match", "prefill_cache_hit", "decode_cache_hit"):
        feed(st, h, sigma(1e-4), n=32)  # at 12 samples the limit is not reached
    (d,) = diagnose(st)
    assert d.condition == 1 and d.conditions == [1] and d.finding is Finding.BATCH_VARIANCE
    assert StepKind.RELAUNCH_DETERMINISTIC in steps(d)  # deterministic inference is off
    assert d.action is None


def test_deterministic_on_and_still_nonzero_points_at_the_dumper():
    """The H200 case: deterministic on, match 3.81e-4, prefill_cache_hit 3.81e-4 (the same
    values), decode_cache_hit 3.96e-4."""
    st = SessionStore()
    started(
        st,
        enable_deterministic_inference=True,
        attention_backend="triton",
        disable_cuda_graph=False,
        page_size=1,
        tp_size=1,
        disable_radix_cache=False,
    )
    feed(st, "match", sigma(3.81e-4), n=16, length=128, seed=1)
    feed(st, "prefill_cache_hit", sigma(3.81e-4), n=16, length=128, seed=1)
    feed(st, "decode_cache_hit", sigma(3.96e-4), n=16, length=128, seed=2)
    (d,) = diagnose(st)
    assert d.condition == 1 and d.conditions == [1], said(d).evidence
    assert d.finding is Finding.DETERMINISTIC_SHAPE
    assert d.headline.helpers == ("prefill_cache_hit", "decode_cache_hit")
    assert StepKind.RELAUNCH_DETERMINISTIC not in steps(d)  # already on: never advised
    assert SuspectKind.DETERMINISTIC_OFF not in [s.kind for s in d.suspects]
    assert d.action == "dumps"
    assert d.command == Command(CommandKind.DUMPS, S)
    assert Suspect(SuspectKind.DECODE_VS_EXTEND, "triton") in d.suspects
    assert Suspect(SuspectKind.CUDA_GRAPH) in d.suspects
    (read,) = [e for e in d.evidence if isinstance(e, Settings)]  # the settings it read
    assert ("enable_deterministic_inference", True) in read.pairs


def test_cache_helper_50x_above_match_is_a_hidden_condition_2():
    st = SessionStore()
    started(st, enable_deterministic_inference=False)
    feed(st, "match", sigma(1e-5))
    feed(st, "prefill_cache_hit", sigma(5e-4))
    (d,) = diagnose(st)
    assert d.conditions == [1, 2] and d.condition == 1
    assert d.finding is Finding.BOTH and d.headline.helpers == ("prefill_cache_hit",)
    (line,) = [e for e in d.evidence if isinstance(e, PairedLine)]
    assert (line.paired.helper, line.paired.higher, line.paired.lower) == (
        "prefill_cache_hit",
        12,
        0,
    )


def test_match_noisy_and_cache_helpers_exactly_zero_is_not_similar_level():
    st = SessionStore()
    feed(st, "match", 1e-4)
    feed(st, "prefill_cache_hit", 0.0)
    feed(st, "decode_cache_hit", 0.0)
    (d,) = diagnose(st)
    assert d.condition == 1 and d.conditions == [1]
    assert d.finding is Finding.MATCH_PATH_ONLY and "similar" not in said(d).label


def test_stray_ulps_are_not_a_state_bug():
    """match 1e-12 with prefill 1e-10: both below the 1e-9 floor, not "1+2"."""
    st = SessionStore()
    feed(st, "match", sigma(1e-12))
    feed(st, "prefill_cache_hit", sigma(1e-10))
    (d,) = diagnose(st)
    assert d.conditions == [1], said(d).label
    # both sides at rounding level on every sample: compared as equal, whatever their ratio
    (line,) = [e for e in d.evidence if isinstance(e, PairedLine)]
    assert line.paired.equal == 12, said(d).evidence


def test_condition_2_only_on_prefill_cache_path():
    st = SessionStore()
    started(st, page_size=4, enable_deterministic_inference=True)
    feed(st, "match", 0.0)
    feed(st, "prefill_cache_hit", 0.3)
    feed(st, "decode_cache_hit", 0.0)
    (d,) = diagnose(st)
    assert d.condition == 2 and d.conditions == [2] and d.finding is Finding.STATE_BUG
    assert d.basis.path("prefill_cache_hit").verdict == "state"
    assert d.headline.primary == "prefill_cache_hit"
    (onset,) = [e for e in d.evidence if isinstance(e, Onset)]
    assert (onset.helper, onset.onset) == ("prefill_cache_hit", OnsetKind.RESTORED_WRONG)
    assert Suspect(SuspectKind.PAGE_RESTORE, figure=4) in d.suspects
    assert steps(d) == [StepKind.CONDITION2] and d.action is None  # cross_server isolates it


def test_mid_generation_divergence_is_described():
    st = SessionStore()
    feed(st, "match", 0.0)
    feed(st, "decode_cache_hit", 0.3, start=9)
    (d,) = diagnose(st)
    assert d.condition == 2
    (onset,) = [e for e in d.evidence if isinstance(e, Onset)]
    assert (onset.helper, onset.onset, onset.median) == ("decode_cache_hit", OnsetKind.MID, 9)


def test_condition_1_plus_2():
    st = SessionStore()
    feed(st, "match", 1e-6)
    feed(st, "prefill_cache_hit", 0.5)
    (d,) = diagnose(st)
    assert d.conditions == [1, 2] and d.kind == "1+2"


def test_match_alone_does_not_claim_cache_helpers_agree():
    st = SessionStore()
    feed(st, "match", 1e-4)
    (d,) = diagnose(st)
    assert d.condition == 1 and d.finding is Finding.CACHE_NOT_TESTED


def test_without_match_it_is_inconclusive():
    st = SessionStore()
    feed(st, "prefill_cache_hit", 0.3)
    (d,) = diagnose(st)
    assert d.condition is None and d.conditions == []
    assert d.finding is Finding.BASELINE_NOT_TESTED and d.basis.untested["match"] == NOT_RUN


def test_vacuous_helper_is_named_not_counted():
    st = SessionStore()
    feed(st, "match", 0.0)
    st.apply(HelperStarted("prefill_cache_hit", S, 8, 1e-3, 1e-3))
    st.apply(
        HelperFinished(
            "prefill_cache_hit",
            S,
            {"status": "vacuous", "scored": 0, "reason": "radix cache disabled"},
        )
    )
    (d,) = diagnose(st)
    assert d.condition is None and d.finding is Finding.EXACT_WHERE_TESTED
    assert d.basis.untested["prefill_cache_hit"] == Untested(
        Why.UNUSABLE, 0, 8, "vacuous", "radix cache disabled"
    )
    (note,) = [e for e in d.evidence if isinstance(e, NotTested)]
    assert note.why == Untested(Why.UNUSABLE, 0, 8, "vacuous", "radix cache disabled")


def test_evidence_statistics():
    assert signed_rank_p(np.ones(10)) == pytest.approx(2**-10)
    assert signed_rank_p(np.zeros(4)) == 1.0
    # ranks 1, 2, 3 with signs +, -, +: W = 4; sums >= 4 among the 8 sign patterns: 3
    assert signed_rank_p(np.array([1.0, -2.0, 3.0])) == pytest.approx(3 / 8)
    big = np.random.default_rng(0).standard_normal(1000)  # the normal approximation
    assert 0.01 < signed_rank_p(big) < 0.99 and signed_rank_p(np.abs(big)) < 1e-100


def test_bit_identical_between_runs():
    a, b, c = SessionStore(), SessionStore(), SessionStore()
    feed(a, "match", 1e-5)
    feed(b, "match", 1e-5)
    feed(c, "match", 2e-5)
    assert bit_identical(a, b) is True
    assert bit_identical(a, c) is False
    eq = rerun_equality(a, c)
    assert eq.first_difference is not None and eq.first_difference.to_json() == {
        "helper": "match",
        "server": S,
        "sample": 0,
        "position": 0,
        "side": "prefill",
    }
    d = SessionStore()
    feed(d, "prefill_cache_hit", 1e-5)
    assert bit_identical(a, d) is None
    assert rerun_equality(a, d).why is NotComparable.HELPERS


def test_a_vllm_baseline_scored_against_the_reference_is_not_diagnosed():
    # seen on the H200: --baseline VLLM --baseline hf:PATH ran hf_reference's vLLM pair "on" the
    # vLLM URL, and the diagnosis listed it as "no helper finished yet"
    st = SessionStore()
    vllm = "http://127.0.0.1:2"
    servers = [{"url": S, "engine": "sglang"}, {"url": vllm, "engine": "vllm"}]
    st.apply(RunStarted("r", 0.0, {"max_new_tokens": 16}, servers, {"max_len": 30}, "0"))
    for h in ("match", "prefill_cache_hit", "decode_cache_hit"):
        feed(st, h, 0.0)
    feed(st, "hf_reference", 0.01, server=vllm)
    (d,) = diagnose(st)
    assert d.server == S and d.kind == "exact"
