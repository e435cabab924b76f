"""kltui ablate's plan (issue 29): a base and one knob at a time, values equal to the base's
skipped, stable names, --pairs from the knobs that moved the result most, and attach mode's
knobs that separate a running server from the base."""

from __future__ import annotations

import pytest

from kltui.ablate.knobs import parse_vary
from kltui.ablate.plan import attach, config_name, pairs, plan, separating
from kltui.errors import UsageError

BASE = "python -m sglang.launch_server --model-path M --attention-backend triton".split()


def varies(*specs: str):
    return [parse_vary(s) for s in specs]


def test_one_knob_at_a_time_with_stable_names():
    p = plan(BASE, varies("attention-backend=fa3", "cuda-graph=off", "deterministic=on"))
    assert [c.name for c in p.configs] == [
        "base",
        "attention-backend=fa3",
        "cuda-graph=off",
        "deterministic=on",
    ]
    assert p.base.argv == tuple(BASE) and p.base.changes == {} and p.base.is_base
    fa3 = p.singles[0]
    assert fa3.changes == {"attention-backend": "fa3"}
    assert fa3.argv == (*BASE[:-1], "fa3")
    assert p.singles[1].argv == (*BASE, "--disable-cuda-graph")
    assert p.singles[2].argv == (*BASE, "--enable-deterministic-inference")
    assert all(not c.is_base for c in p.singles)


def test_values_equal_to_the_bases_are_skipped():
    p = plan(BASE, varies("attention-backend=triton,fa3", "cuda-graph=on,off", "page-size=1"))
    assert [c.name for c in p.singles] == ["attention-backend=fa3", "cuda-graph=off", "page-size=1"]
    assert [(s.knob, s.value) for s in p.skipped] == [
        ("attention-backend", "triton"),
        ("cuda-graph", "on"),
    ]
    assert "the base already runs with it" in p.skipped[0].line()
    # a value flag the base does not set runs with the server's default: never skipped
    assert p.singles[-1].argv[-2:] == ("--page-size", "1")


def test_a_knob_varied_twice_is_refused():
    with pytest.raises(UsageError, match="tp given twice"):
        plan(BASE, varies("tp=2", "tp=4"))
    with pytest.raises(UsageError, match="set the same flag --disable-cuda-graph"):
        plan(BASE, varies("cuda-graph=off", "--disable-cuda-graph=on"))
    with pytest.raises(UsageError, match="nothing to vary"):
        plan(BASE, [])


def test_pairs_of_the_knobs_that_moved_the_result_most():
    p = plan(
        BASE,
        varies("attention-backend=fa3,flashinfer", "cuda-graph=off", "deterministic=on", "tp=2"),
    )
    movement = {
        "attention-backend=fa3": 0.1,
        "attention-backend=flashinfer": 1.5,
        "cuda-graph=off": 0.2,
        "deterministic=on": 2.0,
        # tp=2 left out: it did not count (a trap, or not measured)
    }
    (pair,) = pairs(p, movement)
    # knobs in the plan's order, each at the value that moved it most
    assert pair.name == "attention-backend=flashinfer+deterministic=on"
    assert pair.changes == {"attention-backend": "flashinfer", "deterministic": "on"}
    assert pair.argv == (*BASE[:-1], "flashinfer", "--enable-deterministic-inference")
    three = pairs(p, movement, k=3)
    assert [c.name for c in three] == [
        "attention-backend=flashinfer+cuda-graph=off",
        "attention-backend=flashinfer+deterministic=on",
        "cuda-graph=off+deterministic=on",
    ]
    assert pairs(p, {"cuda-graph=off": 1.0}) == ()  # one knob measured: nothing to pair
    with pytest.raises(UsageError):
        pairs(p, movement, k=1)


def test_pairs_break_ties_by_the_plans_order():
    p = plan(BASE, varies("cuda-graph=off", "deterministic=on", "tp=2"))
    (pair,) = pairs(p, {"cuda-graph=off": 0.0, "deterministic=on": 0.0, "tp=2": 0.0})
    assert pair.name == "cuda-graph=off+deterministic=on"
    assert pair.name == config_name({"cuda-graph": "off", "deterministic": "on"})


INFO = {
    "attention_backend": "triton",
    "disable_cuda_graph": False,
    "disable_radix_cache": False,
    "page_size": 1,
    "chunked_prefill_size": 8192,
    "enable_deterministic_inference": True,
    "dtype": "bfloat16",
    "kv_cache_dtype": "auto",
    "tp_size": 1,
    "sampling_backend": "pytorch",
    "random_seed": 1,  # differs between any two servers and is no knob
    "startup_time": 1.0,
}


def test_attach_mode_names_the_knobs_that_separate_each_server():
    fa3 = INFO | {"attention_backend": "fa3", "random_seed": 2, "startup_time": 2.0}
    two = INFO | {"disable_cuda_graph": True, "enable_deterministic_inference": False}
    same = INFO | {"random_seed": 9}
    also_fa3 = fa3 | {"startup_time": 3.0}
    cfgs = attach(
        "http://a:1",
        INFO,
        [("http://b:1", fa3), ("http://c:1", two), ("http://d:1", same), ("http://e:1", also_fa3)],
    )
    assert [(c.name, c.server) for c in cfgs] == [
        ("base", "http://a:1"),
        ("attention-backend=fa3", "http://b:1"),
        ("cuda-graph=off+deterministic=off", "http://c:1"),
        ("same settings", "http://d:1"),
        ("attention-backend=fa3#2", "http://e:1"),
    ]
    assert cfgs[2].changes == {"cuda-graph": "off", "deterministic": "off"}
    assert all(c.argv == () for c in cfgs)


def test_attach_mode_reads_values_as_values_and_names_what_is_not_reported():
    # SGLang's dtype "half" is float16; an int reported as a string is the same int
    other = INFO | {"dtype": "bfloat16", "page_size": "1", "tp_size": 2}
    del other["kv_cache_dtype"]
    changes, unknown = separating(INFO, other)
    assert changes == {"tp": "2"}
    assert unknown == ("kv-cache-dtype",)
    (_, cfg) = attach("http://a:1", INFO, [("http://b:1", other)])
    assert cfg.unknown == ("kv-cache-dtype",) and cfg.to_json()["unknown"] == ["kv-cache-dtype"]
