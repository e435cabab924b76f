"""The bitwise comparison behind re-run equality and the cross-server view."""

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.outputs.reports.common import json_report
from kltui.readings.compare import DiffSide, compare_books, compare_samples
from kltui.readings.cross_server import PairKind, cross_server
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleScored
from kltui.session.store import SessionStore
from kltui.words.cross_server import pair_json
from tests.json_contract import validate

A, B = "http://127.0.0.1:1", "http://127.0.0.1:2"


def scored(ids, lp_a, lp_b, sample=0):
    book = ScoreBook()
    return book.add(sample, np.asarray(ids), np.asarray(lp_a, float), np.asarray(lp_b, float))


def test_identical_including_nan_and_minus_inf():
    x = scored([1, 2, 3], [-1.0, -np.inf, np.nan], [-1.0, -np.inf, np.nan])
    y = scored([1, 2, 3], [-1.0, -np.inf, np.nan], [-1.0, -np.inf, np.nan])
    d = compare_samples(x, y)
    assert d.identical and d.first is None and d.side is None
    assert d.prefill_max_abs == 0.0 and d.decode_max_abs == 0.0


def test_first_difference_and_side():
    x = scored([1, 2, 3, 4], [-1, -2, -3, -4], [-1, -2, -3, -4])
    y = scored([1, 2, 3, 4], [-1, -2, -3.5, -4], [-1, -2.25, -3, -4])
    d = compare_samples(x, y)
    assert (d.first, d.side) == (1, "decode")
    assert d.prefill_first == 2 and d.prefill_max_abs == 0.5 and d.decode_max_abs == 0.25
    y2 = scored([1, 2, 3, 4], [-1, -2.5, -3, -4], [-1, -2.25, -3, -4])
    assert compare_samples(x, y2).side == "both"


def test_values_after_a_different_token_id_are_not_compared():
    x = scored([1, 2, 3, 4], [-1, -2, -3, -4], [-1, -2, -3, -4])
    y = scored([1, 2, 9, 9], [-1, -2, -7, -7], [-1, -2, -8, -8])
    d = compare_samples(x, y)
    assert (d.first, d.side, d.ids_first) == (2, "ids", 2)
    assert d.prefill_first is None and d.prefill_max_abs == 0.0


def test_shorter_side_is_a_difference_at_its_end():
    x = scored([1, 2, 3], [-1, -2, -3], [-1, -2, -3])
    y = scored([1, 2], [-1, -2], [-1, -2])
    d = compare_samples(x, y)
    assert (d.first, d.side) == (2, "length")


def test_books_report_the_earliest_difference():
    bx, by = ScoreBook(), ScoreBook()
    for s, pos in ((0, 5), (1, 2), (2, None)):
        b = -np.arange(1, 9, dtype=float)
        a = b.copy()
        bx.add(s, np.arange(8), a, b)
        a2 = a.copy()
        if pos is not None:
            a2[pos] += 1e-7
        by.add(s, np.arange(8), a2, b)
    by.add(3, np.arange(8), -np.ones(8), -np.ones(8))
    d = compare_books(bx, by)
    assert d.identical is False and d.comparable == 3 and d.only_y == [3]
    out = d.to_dict()
    assert out["first_difference"] == {"sample": 1, "position": 2, "side": "prefill"}
    assert out["identical_samples"] == 1
    assert d.first is not None and d.first.side is DiffSide.PREFILL


def two_servers(noise_b: float, exact_match: bool = False, **settings_b) -> SessionStore:
    """Two servers, same ids. With exact_match, match is bit-exact on both and the
    divergence lives in prefill_cache_hit only (the condition-2 signature)."""
    store = SessionStore()
    servers = [
        {"url": A, "page_size": 1, "enable_deterministic_inference": True},
        {"url": B, "page_size": 1, "enable_deterministic_inference": True, **settings_b},
    ]
    store.apply(RunStarted("r", 0.0, {}, servers, {}, "0"))
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(4):
        b = -rng.random(12) * 3
        rows.append((b + 1e-3 * rng.standard_normal(12), b))
    helpers = {"match": rows}
    if exact_match:
        helpers = {"match": [(b.copy(), b) for _, b in rows], "prefill_cache_hit": rows}
    for helper, hrows in helpers.items():
        for url, extra in ((A, 0.0), (B, noise_b)):
            store.apply(HelperStarted(helper, url, 4, 1e-3, 1e-3))
            book = ScoreBook()
            for i, (a, b) in enumerate(hrows):
                a = a + extra * rng.standard_normal(12) if extra else a
                book.add(i, np.arange(12), a, b)
                store.apply(SampleScored(helper, url, i, np.arange(12), a, b, 0, 20))
            store.apply(
                HelperFinished(helper, url, book.summary(n_samples=4, n_skipped=0, threshold=1))
            )
    return store


def test_identical_across_configurations_with_match_diverging_is_a_kernel():
    # The H200 case (docs/FIELD_NOTES.md): every helper diverges, bit-identical with CUDA graphs
    # on and off; the dumps named the decode attention kernel, not a logic fault.
    (typed,) = cross_server(two_servers(0.0, page_size=16))
    assert typed.reading.kind == PairKind.IDENTICAL_KERNEL
    assert typed.reading.changed == ("page_size",)
    pair = pair_json(typed)  # as the JSON result writes it
    assert pair["servers"] == [A, B] and pair["identical"] is True
    assert pair["settings_differ"] == {"page_size": [1, 16]}
    assert pair["helpers"]["match"]["identical_samples"] == 4


def test_identical_across_configurations_with_match_exact_is_a_logic_fault():
    (pair,) = cross_server(two_servers(0.0, exact_match=True, page_size=16))
    assert pair.identical is True
    assert pair.helpers["match"].avg_kl_div == (0.0, 0.0)
    assert pair.reading.kind == PairKind.IDENTICAL_LOGIC_FAULT


def test_different_values_point_at_kernels_or_races():
    (pair,) = cross_server(two_servers(1e-6, tp_size=2))
    assert pair.identical is False and pair.reading.kind == PairKind.KERNELS
    m = pair.helpers["match"].diff
    assert m.first is not None and m.first.side == "prefill" and m.max_abs("prefill") > 0
    assert m.max_abs("decode") == 0.0
    doc = json_report(two_servers(1e-6))
    validate(doc, "check")
    assert doc["cross_server"][0]["identical"] is False


def test_same_settings_say_little():
    (pair,) = cross_server(two_servers(0.0))
    assert pair.identical is True and pair.reading.kind == PairKind.IDENTICAL_SAME_SETTINGS
