"""--stress pieces without a server: levels, /metrics reading, the options, the reading of two
stores (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest

from kltui.cli.options import build_config
from kltui.cli.parser import make_parser
from kltui.errors import UsageError
from kltui.readings.stress import (
    Idle,
    IdleKind,
    SkipKind,
    SqueezeSkip,
    Uncovered,
    activity,
    read,
)
from kltui.run.config import STRESS_LEVELS
from kltui.run.stress import read_metrics
from kltui.run.stress_levels import LEVELS
from kltui.session.events import HelperStarted, RunStarted, SampleScored, StressTick
from kltui.session.store import SessionStore

URL = "http://127.0.0.1:9"


def test_levels_are_named_once():
    assert tuple(LEVELS) == STRESS_LEVELS == ("light", "moderate", "heavy")
    assert all(lvl.requests > 0 and lvl.seconds > 0 for lvl in LEVELS.values())


def test_metrics_counters_of_either_sglang_name():
    text = (
        "# TYPE sglang:num_retracted_requests_total counter\n"
        'sglang:num_retracted_requests_total{model_name="m"} 3.0\n'
        'sglang:num_retracted_reqs{model_name="m"} 9.0\n'  # the gauge, not counted
        'sglang:evicted_tokens_total{model_name="m"} 128.0\n'
        "sglang:num_retracted_reqs_total 2\n"
    )
    assert read_metrics(text) == {"retractions": 5.0, "evicted_tokens": 128.0}
    # served but never incremented (absent from the page): 0, as real SGLang shows it
    assert read_metrics("garbage\n{{ }}\n") == {"retractions": 0.0, "evicted_tokens": 0.0}


def _args(*argv):
    return make_parser().parse_args(["check", "--server", "127.0.0.1:9", *argv])


def test_options_reach_the_config():
    cfg = build_config(_args("--stress", "heavy", "--batch-sizes", "32,1,8,8"))
    assert cfg.stress == "heavy" and cfg.batch_sizes == [1, 8, 32]
    assert cfg.to_record()["stress"] == "heavy" and cfg.to_record()["stressed"] is False
    with pytest.raises(UsageError, match="--batch-sizes"):
        build_config(_args("--batch-sizes", "1,x"))
    with pytest.raises(SystemExit):
        _args("--stress", "brutal")


def _store(deterministic: bool, lp_b: list[list[float]], stressed: bool, ticks=()):
    st = SessionStore()
    server = {"url": URL, "engine": "sglang", "enable_deterministic_inference": deterministic}
    config = {"stress": "light", "stressed": stressed}
    st.apply(RunStarted("r", 0.0, config, [server], {}, "0"))
    st.apply(HelperStarted("match", URL, len(lp_b), 1e-3, 1e-3))
    for i, b in enumerate(lp_b):
        ids = np.arange(len(b))
        a = np.full(len(b), -1.0)
        st.apply(SampleScored("match", URL, i, ids, a, np.asarray(b), 0, 4))
    for t in ticks:
        st.apply(t)
    return st


def _tick(moment, sent, at, kinds=None):
    counts = {"sent": sent, "elapsed_s": at, "by_kind": kinds or {"long": sent}, "in_flight": 2}
    return StressTick(URL, "light", moment, counts)


def test_deterministic_reading_names_sample_position_and_traffic():
    ticks = [_tick("start", 0, 0.0), _tick("match/decode", 4, 1.0), _tick("match/flush", 9, 3.0)]
    quiet = _store(True, [[-1.0, -1.0], [-1.0, -1.0]], False)
    loud = _store(True, [[-1.0, -1.0], [-1.0, -1.5]], True, ticks)
    r = read(quiet, loud)
    (h,) = r.helpers
    assert r.state_bug and h.verdict == "state bug under load"
    assert (h.first.sample, h.first.first, h.first.side) == (1, 1, "decode")
    assert h.during is not None and h.during.sent == 5 and h.during.by_kind == {"long": 5}
    assert activity(ticks, "match", "prefill") is None
    assert read(quiet, _store(True, [[-1.0, -1.0], [-1.0, -1.0]], True, ticks)).verdict == "clean"


def test_other_servers_get_the_paired_test_never_a_bit_difference():
    rng = np.random.default_rng(0)
    noise = [list(-1.0 + rng.normal(0, 1e-3, 6)) for _ in range(16)]
    louder = [list(-1.0 + rng.normal(0, 1e-3, 6)) for _ in range(16)]
    ticks = [_tick("start", 0, 0.0), _tick("end", 4, 1.0)]
    r = read(_store(False, noise, False), _store(False, louder, True, ticks))
    (h,) = r.helpers
    assert not r.state_bug and h.verdict in ("within noise", "suspect") and h.first is None
    few = read(_store(False, noise[:4], False), _store(False, louder[:4], True, ticks))
    assert few.helpers[0].verdict == "inconclusive" and few.verdict == "inconclusive"


async def test_a_pool_beyond_the_levels_squeeze_budget_is_not_squeezed_and_says_so():
    # an H200's pool holds ~1e6 tokens: light's 8192-token budget cannot reach inside the
    # helper's prefixes there, so it sends nothing rather than a squeeze that evicts nothing
    import numpy as np

    from kltui.run.stress import Traffic
    from kltui.run.stress_levels import LEVELS

    info = {"max_total_num_tokens": 1_000_000, "context_length": 131072, "page_size": 1}
    t = Traffic(
        "http://127.0.0.1:9", LEVELS["light"], [np.arange(1, 40)], info, seed=0, max_new_tokens=8
    )
    try:
        await t.squeeze("prefill_cache_hit")
    finally:
        await t.http.aclose()
    (sq,) = t.snapshot()["squeezes"]
    assert sq["skipped"].startswith("99") and "over the light level's 8192" in sq["skipped"]
    assert t.counts.sent == 0
    no_pool = Traffic(
        "http://127.0.0.1:9", LEVELS["light"], [np.arange(1, 40)], {}, seed=0, max_new_tokens=8
    )
    try:
        await no_pool.squeeze("prefill_cache_hit")
    finally:
        await no_pool.http.aclose()
    assert "reports no KV pool size" in no_pool.squeezes[0]["skipped"]


def _counts(sent, at, in_flight=0, errors=0, stopped=None, last_error=None):
    return {
        "sent": sent,
        "elapsed_s": at,
        "by_kind": {"long": sent},
        "in_flight": in_flight,
        "errors": errors,
        "stopped": stopped,
        "last_error": last_error,
    }


def test_a_helper_measured_after_the_traffic_stopped_is_inconclusive_not_identical():
    # the light level's 120 s bound ended the traffic before match measured: its "stressed"
    # run was a quiet one, and bit-identical to the quiet run proves nothing about load
    ticks = [
        StressTick(URL, "light", "start", _counts(0, 0.0)),
        StressTick(URL, "light", "match/flush", _counts(200, 120.0, stopped="seconds")),
        StressTick(URL, "light", "match/decode", _counts(200, 121.0, stopped="seconds")),
        StressTick(URL, "light", "match/prefill", _counts(200, 122.0, stopped="seconds")),
        StressTick(URL, "light", "match/done", _counts(200, 123.0, stopped="seconds")),
        StressTick(URL, "light", "end", _counts(200, 123.0, stopped="seconds")),
    ]
    same = [[-1.0, -1.0], [-1.0, -1.0]]
    r = read(_store(True, same, False), _store(True, same, True, ticks))
    (h,) = r.helpers
    assert h.load == 0 and h.verdict == "inconclusive" and r.verdict == "inconclusive"
    assert h.idle == Idle(IdleKind.BOUND, bound="seconds")
    # a difference is still a difference: named, whatever the traffic did
    diff = read(_store(True, same, False), _store(True, [[-1.0, -1.0], [-1.0, -1.5]], True, ticks))
    assert diff.state_bug and diff.helpers[0].verdict == "state bug under load"
    # the same helper with requests in flight as its decode began was under load
    busy = [*ticks]
    busy[2] = StressTick(URL, "light", "match/decode", _counts(200, 121.0, in_flight=3))
    r = read(_store(True, same, False), _store(True, same, True, busy))
    assert r.helpers[0].load == 3 and r.verdict == "clean"


def test_traffic_that_only_failed_is_no_load():
    # every background request refused at once: nothing ran beside the helper
    ticks = [
        StressTick(URL, "light", "start", _counts(0, 0.0)),
        StressTick(URL, "light", "match/decode", _counts(0, 1.0)),
        StressTick(URL, "light", "match/prefill", _counts(6, 2.0, errors=6)),
        StressTick(URL, "light", "end", _counts(9, 3.0, errors=9, last_error="HTTP 400: bad ids")),
    ]
    noise = [[-1.0, -1.0 + 1e-4], [-1.0, -1.0 - 1e-4]]
    r = read(_store(False, noise, False), _store(False, noise, True, ticks))
    (h,) = r.helpers
    assert h.load == 0 and h.verdict == "inconclusive"
    assert h.idle == Idle(IdleKind.FAILED, last_error="HTTP 400: bad ids")
    # no tick of the helper at all (only start and end): unknown, the reading as before
    r = read(_store(True, noise, False), _store(True, noise, True, [ticks[0], ticks[-1]]))
    assert r.helpers[0].load is None and r.helpers[0].verdict == "identical"


def _end(server, evictions_observed=0, squeezes=()):
    counts = _counts(132, 33.9, in_flight=2) | {
        "evictions_observed": evictions_observed,
        "squeezes": list(squeezes),
        "server": server,
    }
    return StressTick(URL, "light", "end", counts)


def test_a_clean_reading_names_the_paths_the_traffic_never_reached():
    # the H200 8B run (docs/FIELD_NOTES.md section 9): a pool of 845617 tokens, the light
    # squeeze skipped, the server counted 0 retractions and 0 evicted tokens
    skipped = {"helper": "prefill_cache_hit", "pool": 845617, "target": 826914,
               "skipped": "826914 tokens needed, over the light level's 8192"}  # fmt: skip
    same = [[-1.0, -1.0], [-1.0, -1.0]]
    start = StressTick(URL, "light", "start", _counts(0, 0.0))
    busy = StressTick(URL, "light", "match/decode", _counts(40, 10.0, in_flight=3))

    def reading(end):
        return read(_store(True, same, False), _store(True, same, True, [start, busy, end]))

    r = reading(_end({"retractions": 0.0, "evicted_tokens": 0.0}, squeezes=[skipped]))
    assert r.verdict == "clean" and r.not_exercised() == {URL: ["eviction", "retraction"]}
    assert r.uncovered() == [
        Uncovered(
            URL, ("eviction", "retraction"), SqueezeSkip(SkipKind.OVER_LEVEL, 826914, "light", 8192)
        )
    ]
    # evictions counted by the server, or seen by the traffic: only retraction is missing
    for end in (
        _end({"retractions": 0.0, "evicted_tokens": 2060.0}),
        _end({"retractions": 0.0, "evicted_tokens": 0.0}, evictions_observed=1),
    ):
        r = reading(end)
        assert r.not_exercised() == {URL: ["retraction"]}
        assert r.verdict == "clean"
    # both reached: the plain verdict, no coverage line
    r = reading(_end({"retractions": 3.0, "evicted_tokens": 900.0}))
    assert r.not_exercised() == {} and r.uncovered() == [] and r.verdict == "clean"
    # no /metrics: not known either way, so nothing is claimed missing
    assert reading(_end(None)).not_exercised() == {}
    # a state bug keeps its own verdict line: coverage only scopes a clean reading
    bug = read(
        _store(True, same, False),
        _store(True, [[-1.0, -1.0], [-1.0, -1.5]], True,
               [start, busy, _end({"retractions": 0.0, "evicted_tokens": 0.0})]),
    )  # fmt: skip
    assert bug.verdict == "state bug under load" and bug.not_exercised() == {
        URL: ["eviction", "retraction"]
    }


def test_averages_that_differ_below_the_floor_are_equal_within_it_and_say_so():
    # issue 46 item 5: "equal in 32" while the averages read 2.238e-12 vs 2.230e-12
    rng = np.random.default_rng(1)
    quiet = [list(-1.0 + rng.normal(0, 2e-6, 6)) for _ in range(32)]
    loud = [list(-1.0 + rng.normal(0, 2e-6, 6)) for _ in range(32)]
    ticks = [_tick("start", 0, 0.0), _tick("end", 4, 1.0)]
    (h,) = read(_store(False, quiet, False), _store(False, loud, True, ticks)).helpers
    assert quiet != loud  # the two runs differ, every sample's mean k3 below the floor
    assert h.paired is not None and h.paired.equal == 32 and h.verdict == "within noise"
