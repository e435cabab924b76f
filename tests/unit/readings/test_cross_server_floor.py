"""Cross-server readings respect the 1e-9 stray-ulp floor (issue 28, item 7): a cache-hit
helper that differs between a page-1 and a page-4 server by rounding (avg_kl_div ~1e-12 on each
server, about 1000 times below the floor) is rounding, never "a state bug" or condition 2."""

from __future__ import annotations

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.readings.cross_server import PairKind as P
from kltui.readings.cross_server import SuspectKind as S
from kltui.readings.cross_server import cross_server
from kltui.readings.paired import STRAY_ULP_FLOOR
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleScored
from kltui.session.store import SessionStore

A, B = "http://127.0.0.1:1", "http://127.0.0.1:2"
N, LEN = 8, 16
# a decode-side offset whose k3 (about offset**2 / 2) is ~1e-12: rounding between two page sizes
ROUNDING = 1.5e-6
# one whose k3 is ~5e-5: far above the floor, what a restored-state fault gives
STATE_BUG = 1e-2


def run(helpers: list[str]) -> SessionStore:
    store = SessionStore()
    servers = [
        {"url": A, "engine": "sglang", "page_size": 1},
        {"url": B, "engine": "sglang", "page_size": 4},
    ]
    store.apply(RunStarted("r", 0.0, {"helpers": helpers}, servers, {}, "0"))
    return store


def helper(store: SessionStore, name: str, url: str, decode_off: float = 0.0) -> None:
    """`name` on `url`: N samples whose decode side is the prefill side moved by `decode_off`
    (the prefill side is the same on every server: the same seed)."""
    store.apply(HelperStarted(name, url, N, 1e-3, 1e-3))
    rng = np.random.default_rng(7)
    book = ScoreBook()
    for i in range(N):
        a = -rng.random(LEN) * 4
        b = a + decode_off
        ids = np.arange(LEN)
        book.add(i, ids, a, b, 5, 20)
        store.apply(SampleScored(name, url, i, ids, a, b, 5, 20))
    summary = book.summary(n_samples=N, n_skipped=0, threshold=1e-3)
    summary["status"] = "pass" if summary["passed"] else "fail"
    store.apply(HelperFinished(name, url, summary))


def suspects(pair) -> list:
    """(helper, kind, server) of every helper the reading names."""
    return [(s.helper, s.kind, s.server) for s in pair.reading.suspects]


def test_a_cache_helper_differing_at_rounding_level_is_no_state_bug():
    store = run(["match", "prefill_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
    helper(store, "prefill_cache_hit", A)
    helper(store, "prefill_cache_hit", B, decode_off=ROUNDING)
    (pair,) = cross_server(store)
    level = pair.helpers["prefill_cache_hit"].avg_kl_div[1]
    assert level is not None and 0 < level < STRAY_ULP_FLOOR / 100  # the audit's ~1000x below
    assert pair.identical is False  # the bits still differ: that stays true
    assert pair.reading.kind == P.CACHE_PATH
    assert suspects(pair) == [("prefill_cache_hit", S.ROUNDING, None)]


def test_above_the_floor_the_state_bug_reading_stays():
    store = run(["match", "prefill_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
    helper(store, "prefill_cache_hit", A)
    helper(store, "prefill_cache_hit", B, decode_off=STATE_BUG)
    (pair,) = cross_server(store)
    assert suspects(pair) == [("prefill_cache_hit", S.ONE_SERVER, "B")]


def test_one_helper_at_rounding_and_one_above_are_read_apart():
    store = run(["match", "prefill_cache_hit", "decode_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
    helper(store, "prefill_cache_hit", A)
    helper(store, "prefill_cache_hit", B, decode_off=ROUNDING)
    helper(store, "decode_cache_hit", A, decode_off=STATE_BUG)
    helper(store, "decode_cache_hit", B)
    (pair,) = cross_server(store)
    assert suspects(pair) == [
        ("prefill_cache_hit", S.ROUNDING, None),
        ("decode_cache_hit", S.ONE_SERVER, "A"),
    ]


def test_identical_servers_whose_cache_path_diverges_below_the_floor_is_no_logic_fault():
    store = run(["match", "prefill_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
        helper(store, "prefill_cache_hit", url, decode_off=ROUNDING)
    (pair,) = cross_server(store)
    assert pair.identical is True
    assert pair.reading.kind == P.IDENTICAL_ROUNDING
    assert suspects(pair) == [("prefill_cache_hit", S.ROUNDING, None)]


def test_identical_servers_whose_cache_path_diverges_above_the_floor_is_a_logic_fault():
    store = run(["match", "prefill_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
        helper(store, "prefill_cache_hit", url, decode_off=STATE_BUG)
    (pair,) = cross_server(store)
    assert pair.identical is True
    assert pair.reading.kind == P.IDENTICAL_LOGIC_FAULT and pair.reading.suspects == ()


def test_a_path_diverging_on_both_servers_names_neither():
    """The same stale-prefix fault on a page-1 and a page-4 server: prefill_cache_hit differs
    between them and diverges on both (avg_kl_div 0.206 vs 0.211 on the reference servers).
    The larger level is no evidence that the other server's path is sound: neither is named,
    and each server's own diagnosis decides."""
    store = run(["match", "prefill_cache_hit"])
    for url in (A, B):
        helper(store, "match", url)
    helper(store, "prefill_cache_hit", A, decode_off=STATE_BUG)
    helper(store, "prefill_cache_hit", B, decode_off=1.1 * STATE_BUG)
    (pair,) = cross_server(store)
    assert pair.identical is False
    assert suspects(pair) == [("prefill_cache_hit", S.BOTH_DIVERGE, None)]
