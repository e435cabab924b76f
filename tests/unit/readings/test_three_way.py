"""The three-way reading (readings/three_way.py) and the reference's flip summary
(metrics/hf_judge.py) on hand-built data: which engine is closer only beyond chance over enough
samples, "inconclusive" with the reason otherwise, and flips judged by the reference's margin."""

from __future__ import annotations

import numpy as np

from kltui.metrics.cross import Side, cross_positions
from kltui.metrics.hf_judge import align_reference, reference_flips, weights_state
from kltui.readings.three_way import ThreeWayKind, three_way
from kltui.session.events import HelperFinished, HelperStarted
from kltui.session.store import SessionStore

SG, VL, REF = "http://127.0.0.1:30000", "http://127.0.0.1:8000", "hf:/models/m"


def _summary(engine: str, k3: np.ndarray, ukl: np.ndarray, **extra) -> dict:
    rows = [
        {"index": i, "positions": 8, "mean_k3": float(a), "union_kl_mean": float(b),
         "flips": 0, "wide_flips": 0}
        for i, (a, b) in enumerate(zip(k3, ukl, strict=True))
    ]  # fmt: skip
    return {
        "status": "pass",
        "samples": len(rows),
        "scored": len(rows),
        "avg_kl_div": float(np.mean(k3)),
        "engine": engine,
        "reference": REF,
        "positions": 8 * len(rows),
        "top1_agreement": 1.0,
        "union_kl_mean": float(np.mean(ukl)),
        "union_exact": engine == "SGLang",
        "reference_flips": {"line": 0.7, "flips": 0, "near_tie": 0, "wide": 0,
                            "margin_unknown": 0, "near_tie_share": None, "widest": None},
        "reference_per_sample": rows,
        "across_dtypes": None,
        **extra,
    }  # fmt: skip


def _store(sg_k3, vl_k3, sg_u=None, vl_u=None, **extra) -> SessionStore:
    st = SessionStore()
    for url, engine, k3, u in (
        (SG, "SGLang", sg_k3, sg_u if sg_u is not None else sg_k3),
        (VL, "vLLM", vl_k3, vl_u if vl_u is not None else vl_k3),
    ):
        st.apply(HelperStarted("hf_reference", url, len(k3), 2e-3, 1e-3))
        ex = extra if engine == "SGLang" else {}
        st.apply(HelperFinished("hf_reference", url, _summary(engine, k3, u, **ex)))
    return st


def test_an_engine_closer_beyond_chance_is_named():
    rng = np.random.default_rng(0)
    sg = 1e-7 * rng.lognormal(0, 0.5, 20)
    vl = 3e-6 * rng.lognormal(0, 0.5, 20)
    tw = three_way(_store(sg, vl))
    assert tw is not None
    k3 = tw.rankings[0]
    assert k3.n == 20 and k3.p < 2.5e-4 and k3.ratio > 10
    assert tw.kind is ThreeWayKind.CLOSER and tw.closer == "SGLang"
    assert tw.rankings[1].closer == "SGLang"  # union KL agrees
    # and the mirror image names vLLM
    assert three_way(_store(vl, sg)).closer == "vLLM"


def test_the_same_noise_on_both_engines_is_inconclusive():
    rng = np.random.default_rng(1)
    sg = 1e-6 * rng.lognormal(0, 1.0, 30)
    vl = 1e-6 * rng.lognormal(0, 1.0, 30)
    tw = three_way(_store(sg, vl))
    assert tw.kind is ThreeWayKind.NOT_BEYOND_CHANCE and tw.closer is None
    assert tw.rankings[0].n == 30 and tw.rankings[0].p >= 2.5e-4


def test_both_within_rounding_of_the_reference_is_said_so():
    # real CPU SGLang and vLLM in float32: avg_kl_div 9e-14 and 1e-12, both at rounding level
    tw = three_way(_store(np.full(16, 9e-14), np.full(16, 1e-12)))
    assert tw.rankings[0].at_floor == 16
    assert tw.kind is ThreeWayKind.ROUNDING


def test_too_few_samples_are_inconclusive_whatever_the_gap():
    tw = three_way(_store(np.full(8, 1e-9), np.full(8, 1e-3)))
    assert tw.kind is ThreeWayKind.TOO_FEW


def test_metrics_that_disagree_are_inconclusive():
    rng = np.random.default_rng(2)
    lo, hi = 1e-7 * rng.lognormal(0, 0.3, 20), 1e-5 * rng.lognormal(0, 0.3, 20)
    tw = three_way(_store(lo, hi, sg_u=hi, vl_u=lo))
    assert tw.kind is ThreeWayKind.METRICS_DISAGREE
    assert {r.closer for r in tw.rankings} == {"SGLang", "vLLM"}


def test_across_dtypes_is_kept_with_both_dtypes():
    rng = np.random.default_rng(3)
    st = _store(
        1e-7 * rng.lognormal(0, 0.5, 20),
        3e-6 * rng.lognormal(0, 0.5, 20),
        across_dtypes={"engine": "bfloat16", "reference": "float32"},
    )
    tw = three_way(st)
    assert tw.across_dtypes and [(d.engine, d.dtype, d.reference) for d in tw.dtypes] == [
        ("SGLang", "bfloat16", "float32")
    ]


def test_flips_are_judged_by_the_references_margin():
    p, k = 4, 3
    ids = np.arange(p, dtype=np.int64)
    # engine (A) top-1 is id 10 everywhere; the reference (B) ranks 11 first
    top_a = np.tile([10, 11, 12], (p, 1))
    lp_a = np.tile([-0.5, -1.0, -3.0], (p, 1))
    top_b = np.tile([11, 10, 12], (p, 1))
    # reference margins: 0.1 (near a tie) at 0-1, 2.0 (sure) at 2-3
    lp_b = np.array([[-0.6, -0.7, -3.0], [-0.6, -0.7, -3.0], [-0.1, -2.1, -4.0], [-0.1, -2.1, -4]])
    a = Side(ids, np.full(p, -1.0), top_a, lp_a)
    b = Side(ids, np.full(p, -1.0), top_b, lp_b)
    fl = reference_flips([(0, cross_positions(a, b))])
    assert (fl.flips, fl.near_tie, fl.wide) == (4, 2, 2)
    assert fl.near_tie_share == 0.5 and fl.widest is not None and fl.widest.position == 2
    assert k == top_a.shape[1]


def test_the_union_is_exact_when_each_side_knows_the_others_top_k():
    p = 3
    ids = np.array([5, 6, 7])
    top_a = np.tile([1, 2], (p, 1))
    top_b = np.tile([3, 4], (p, 1))
    lp = np.tile([-1.0, -2.0], (p, 1))
    # the engine also reports the reference's top ids; the reference every asked id
    a = Side(ids, np.full(p, -3.0), top_a, lp, np.array([3, 4]), np.tile([-1.5, -2.5], (p, 1)))
    b = Side(ids, np.full(p, -3.1), top_b, lp, pos_ids=top_a, pos_lp=np.tile([-1.4, -2.2], (p, 1)))
    c = cross_positions(a, b)
    assert (c.union_known == c.union_size).all()
    folded = cross_positions(Side(ids, np.full(p, -3.0), top_a, lp), Side(ids, a.lp, top_b, lp))
    assert (folded.union_known < folded.union_size).all()


def test_other_weights_are_different_and_a_rename_alone_is_not_proof():
    ref = {"model_path": "/m/llama", "local_weights_sha256": "a" * 64}
    assert weights_state({"local_weights_sha256": "a" * 64, "model_path": "/x/other"}, ref)[0] == (
        "same"
    )
    state, why = weights_state({"local_weights_sha256": "b" * 64, "model_path": "/m/llama"}, ref)
    assert state == "different" and "differ" in why
    assert weights_state({"model_path": "/srv/llama"}, ref)[0] == "unverified"
    assert weights_state({"model_path": "/srv/mistral"}, ref)[0] == "different"
    rows = {r.key: r for r in align_reference({"dtype": "bfloat16"}, {"dtype": "float32"})}
    assert rows["dtype"].status == "mismatch"


def test_cross_engines_floors_join_the_table_as_each_engine_against_itself():
    from kltui.metrics.floors import FloorKind, read_floors
    from kltui.readings.floors import kind_of

    rng = np.random.default_rng(0)
    st = _store(1e-7 * rng.lognormal(0, 0.5, 20), 3e-6 * rng.lognormal(0, 0.5, 20))
    zero = {"samples": [0, 1], "positions": 16, "avg_k3": 0.0, "mean_abs_delta": 0.0,
            "max_abs_delta": 0.0, "top1_agreement": 1.0, "union_kl_mean": 0.0,
            "differing_positions": 0, "zero": True,
            "flip_margins": {"flips": 0, "within_line": 0, "across_line": 0}}  # fmt: skip
    noisy = {**zero, "avg_k3": 2e-6, "mean_abs_delta": 1e-3, "zero": False}
    floors = {"samples": [0, 1], "of": 20, "composition": "one at a time", "error": None,
              "sglang": zero, "vllm": noisy, "gap": {"avg_k3": 1e-6},
              "reading": read_floors(1e-6, 0.0, 2e-6).to_json()}  # fmt: skip
    st.apply(HelperStarted("cross_engine", SG, 20, 2e-3, 1e-3))
    st.apply(HelperFinished("cross_engine", SG, {"status": "pass", "floors": floors}))
    tw = three_way(st)
    assert tw is not None
    legs = {leg.name: leg for leg in tw.legs}
    assert legs["SGLang vs itself"].avg_kl_div == 0.0 and legs["SGLang vs itself"].samples == 2
    assert legs["vLLM vs itself"].mean_abs_delta == 1e-3
    assert tw.floors is floors and kind_of(tw.floors) is FloorKind.WITHIN
    # without cross_engine's floors the table is the three pairs it was
    assert [leg.name for leg in three_way(_store(np.ones(3), np.ones(3))).legs] == [
        "SGLang vs HF", "vLLM vs HF"]  # fmt: skip
