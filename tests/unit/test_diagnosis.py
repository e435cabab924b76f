import numpy as np

from kltui.diagnosis import bit_identical, diagnose
from kltui.events import HelperFinished, HelperStarted, SampleScored
from kltui.metrics import ScoreBook
from kltui.session import SessionStore

S = "http://127.0.0.1:1"


def feed(store: SessionStore, helper: str, noise: float, start: int = 0, n: int = 8) -> None:
    store.apply(HelperStarted(helper, S, n, 1e-3, 1e-3))
    book = ScoreBook()
    rng = np.random.default_rng(len(helper))
    for i in range(n):
        b = -rng.random(16) * 4
        a = b.copy()
        a[start:] += noise * rng.standard_normal(16 - start)
        book.add(i, np.arange(16), a, b, 5, 30)
        store.apply(SampleScored(helper, S, i, np.arange(16), a, b, 5, 30))
    store.apply(HelperFinished(helper, S, book.summary(n_samples=n, n_skipped=0, threshold=1e-3)))


def test_all_exact():
    st = SessionStore()
    for h in ("match", "prefill_cache_hit", "decode_cache_hit"):
        feed(st, h, 0.0)
    (d,) = diagnose(st)
    assert d.condition == "exact"


def test_condition_1_noise_everywhere():
    st = SessionStore()
    for h in ("match", "prefill_cache_hit", "decode_cache_hit"):
        feed(st, h, 1e-4)
    (d,) = diagnose(st)
    assert d.condition == "1" and "batch variance" in d.headline


def test_condition_2_only_on_prefill_cache_path():
    st = SessionStore()
    feed(st, "match", 0.0)
    feed(st, "prefill_cache_hit", 0.3)
    feed(st, "decode_cache_hit", 0.0)
    (d,) = diagnose(st)
    assert d.condition == "2" and "prefill_cache_hit" in d.headline
    assert any("first generated token" in x for x in d.details)


def test_mid_generation_divergence_is_described():
    st = SessionStore()
    feed(st, "match", 0.0)
    feed(st, "decode_cache_hit", 0.3, start=9)
    (d,) = diagnose(st)
    assert d.condition == "2"
    assert any("mid-generation (median position 9" in x for x in d.details)


def test_condition_1_plus_2():
    st = SessionStore()
    feed(st, "match", 1e-6)
    feed(st, "prefill_cache_hit", 0.5)
    (d,) = diagnose(st)
    assert d.condition == "1+2"


def test_bit_identical_between_runs():
    a, b, c = SessionStore(), SessionStore(), SessionStore()
    feed(a, "match", 1e-5)
    feed(b, "match", 1e-5)
    feed(c, "match", 2e-5)
    assert bit_identical(a, b) is True
    assert bit_identical(a, c) is False
    d = SessionStore()
    feed(d, "prefill_cache_hit", 1e-5)
    assert bit_identical(a, d) is None


def test_match_alone_does_not_claim_cache_helpers_agree():
    st = SessionStore()
    feed(st, "match", 1e-4)
    (d,) = diagnose(st)
    assert d.condition == "1" and "will tell" in d.headline
