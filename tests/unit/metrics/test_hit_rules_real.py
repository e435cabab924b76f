"""The engine's hit rules against real SGLang 0.5.17 (tests/data/real_hybrid: three hybrid shapes
on an H100): on the very requests SGLang's kl_multiturn_utils judged, kltui's rule accepts
exactly what its Mamba asserts accepted, and the geometry read from the real /server_info is
the one the server ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kltui.engines.geometry import MambaStrategy, Source, StateKind
from kltui.engines.geometry_build import build_geometry
from kltui.metrics.hit_rules import HitKind, MissKind, decode_count, prefill_count

DATA = Path(__file__).parents[2] / "data" / "real_hybrid"


def _load(shape: str) -> dict:
    return json.loads((DATA / f"{shape}.json").read_text())


@pytest.mark.parametrize("shape", ["q3n", "nh"])
def test_mamba_rules_accept_what_sglangs_kit_accepted(shape):
    d = _load(shape)
    chunk, interval = d["chunk_size"], d["track_interval"]
    for r in d["prefill_cache_hit"]:
        count = prefill_count(r["cached_tokens"], r["prefix_len"], chunk)
        assert count.hit is r["kl_multiturn_utils_mamba_accepts"], r
    for r in d["decode_cache_hit"]:
        count = decode_count(r["cached_tokens"], r["history_len"], r["output_len"], interval)
        assert count.hit is r["kl_multiturn_utils_mamba_accepts"], r
    decode_hits = sum(
        decode_count(r["cached_tokens"], r["history_len"], r["output_len"], interval).hit
        for r in d["decode_cache_hit"]
    )
    dense_hits = sum(
        decode_count(r["cached_tokens"], r["history_len"], r["output_len"], None).hit
        for r in d["decode_cache_hit"]
    )
    # the blindness of issue 57: kl_test_utils' rule found 5 of 16, the server's own 16 of 16
    assert (dense_hits, decode_hits) == (d["kltui_today_scored"]["decode_cache_hit"], 16)


def test_the_one_real_prefill_past_its_chunk_is_a_miss_with_that_kind():
    d = _load("q3n")
    odd = [r for r in d["prefill_cache_hit"] if not r["kl_multiturn_utils_mamba_accepts"]]
    assert [(r["prefix_len"], r["cached_tokens"]) for r in odd] == [(866, 862)]
    count = prefill_count(862, 866, d["chunk_size"])
    assert count.kind is MissKind.PAST_CHECKPOINT and (count.lower, count.upper) == (768, 832)
    assert prefill_count(192, 245, 64).kind is HitKind.CHECKPOINT


@pytest.mark.parametrize("shape", ["q3n", "nh"])
def test_the_real_server_info_reads_as_a_mamba_geometry(shape):
    d = _load(shape)
    g = build_geometry(d["server_info"], {}, None)
    assert g.kind is StateKind.MAMBA and g.known
    assert g.mamba is not None and g.mamba.strategy is MambaStrategy.EXTRA_BUFFER
    assert g.mamba.track_interval is not None
    assert (g.mamba.track_interval.value, g.mamba.track_interval.source) == (
        256,
        Source.SERVER_INFO,
    )


def test_a_sliding_window_server_is_not_mamba_and_its_hits_are_dense():
    d = _load("go")
    g = build_geometry(d["server_info"], {}, None)
    # swa_full_tokens_ratio is reported by every server; the window itself is in config.json
    assert g.kind is StateKind.DENSE and g.window is None
    assert all(
        prefill_count(r["cached_tokens"], r["prefix_len"], None).hit for r in d["prefill_cache_hit"]
    )
    assert all(
        decode_count(r["cached_tokens"], r["history_len"], r["output_len"], None).hit
        for r in d["decode_cache_hit"]
    )


def test_multiturns_mamba_rules_are_the_same_asserts():
    from kltui.metrics.turn_hits import mamba_rules

    d = _load("q3n")
    rules = mamba_rules(d["chunk_size"], d["track_interval"], "server_info")
    for r in d["prefill_cache_hit"]:
        ok = rules.prefill(r["prefix_len"]).holds(r["cached_tokens"])
        assert ok is r["kl_multiturn_utils_mamba_accepts"], r
    for r in d["decode_cache_hit"]:
        ok = rules.decode(r["history_len"], r["output_len"]).holds(r["cached_tokens"])
        assert ok is r["kl_multiturn_utils_mamba_accepts"], r
