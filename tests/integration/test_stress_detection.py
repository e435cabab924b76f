"""The detection benchmark's table (docs/DIAGNOSIS.md, bench/bench_stress_detection.py), pinned
with seed 0 on the faults match alone decides: the position fault is caught quiet at the
position it predicts, the batch fault only under --stress, the eviction fault only with the
squeeze before prefill_cache_hit's hits, and --stress raises no false alarm on the same server
without a fault."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from kltui.words.stress import activity_line

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_stress_detection.py"
spec = importlib.util.spec_from_file_location("bench_stress_detection", BENCH)
bench = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench  # dataclasses look their module up there
spec.loader.exec_module(bench)

MATCH = ["match"]


def one(fault: str):
    (t,) = bench.measure(fault, 1, "light", seed0=0, helpers=MATCH).trials
    return t


def test_kv_corrupt_is_caught_quiet_where_it_says():
    t = one(f"kv-corrupt-after:{bench.KV_AFTER}")
    assert t.quiet and t.stressed and t.exact is True


def test_batch_switch_needs_the_load():
    t = one("batch-switch:6")
    assert not t.quiet  # 4 samples never make a step of more than 6 requests
    assert t.stressed and t.reading.state_bug and "match" in t.where


def test_no_false_alarm_without_a_fault():
    t = one("none")
    assert not t.quiet and not t.stressed
    assert t.reading is not None and t.reading.verdict == "clean"


def test_evict_under_pressure_is_caught_by_the_squeeze_before_the_hits():
    # prefill_cache_hit's warm runs alone, then the squeeze fills the pool so that the radix
    # cache evicts part of the warmed prefixes just before the hits (it was 0/2 without it)
    (t,) = bench.measure(
        "evict-under-pressure", 1, "light", seed0=0, helpers=["prefill_cache_hit"]
    ).trials
    assert not t.quiet  # a quiet helper never fills the pool
    assert t.stressed and t.reading.state_bug and "prefill_cache_hit" in t.where
    bug = next(h for h in t.reading.helpers if h.state_bug)
    assert bug.during is not None and bug.during.squeezed > 0  # the squeeze ran before the hits
    assert t.trigger == activity_line(bug.during)  # its words: tests/unit/words


def test_the_squeeze_raises_no_false_alarm_on_a_correct_server():
    (t,) = bench.measure("none", 1, "light", seed0=0, helpers=["prefill_cache_hit"]).trials
    assert not t.quiet and not t.stressed
    assert t.reading is not None and t.reading.verdict == "clean"
    (traffic,) = t.reading.traffic.values()
    (sq,) = traffic["squeezes"]
    assert sq["sent_tokens"] == sq["target"] > 0 and "skipped" not in sq
