"""Issue 44: a knob that introduces a divergence on a bit-exact base is named (Effect
INTRODUCED, VerdictKind INTRODUCED, the JSON's `verdict.introduced`, exit 1), never "nothing to
remove"; and helpers whose verdicts differ read as the weakest overall, each helper's said."""

from __future__ import annotations

import numpy as np

from kltui.ablate.sweep import MEASURED, ConfigRun, Sweep
from kltui.readings.ablation import (
    INTRODUCED,
    INTRODUCED_KIND,
    LOCALIZED,
    NO_SINGLE,
    NOTHING,
    read,
)
from kltui.readings.ablation_kinds import Shape, Step, VerdictKind
from kltui.readings.ablation_outcome import exit_code, reading
from kltui.words.ablation_json import ablation_json
from tests.unit.ablate.test_ablate_reading import HELPERS, INFO, noisy, rows_at, store, sweep, url

DET = INFO | {"enable_deterministic_inference": True}


def sweep_exit(tmp_path, p, stores) -> int:
    runs = [ConfigRun(c, c.name, status=MEASURED, store=stores[c.name]) for c in p.configs]
    s = Sweep(tmp_path, "launch", runs=runs)
    return exit_code(s, reading(s))


def test_a_knob_that_breaks_a_bit_exact_base_is_named_and_exits_1(tmp_path):
    p = sweep("chunked-prefill-size=16", "page-size=16")
    stores = {
        "base": store(url(0), DET, noisy(0, 0.0)),
        "chunked-prefill-size=16": store(url(1), DET | {"chunked_prefill_size": 16}, noisy(1)),
        "page-size=16": store(url(2), DET | {"page_size": 16}, noisy(2, 0.0)),
    }
    ab = read(p, stores)
    cps = ab.configs[0]
    assert all(h.effect == INTRODUCED for h in cps.helpers)
    m = cps.helper("match")
    assert m is not None and m.base_level == 0.0 and 1e-3 < (m.level or 0) < 1e-2
    assert m.samples == () and m.higher is not None and m.higher.significant
    assert {h.effect for h in ab.configs[1].helpers} == {NOTHING}
    v = ab.verdict
    assert v.kind == INTRODUCED_KIND
    assert v.helpers == () and ab.diverging == ()
    assert [(h.helper, h.level) for h in ab.tested] == [(h, 0.0) for h in HELPERS]
    assert [(i.config, i.helper, i.base_level) for i in v.introduced] == [
        ("chunked-prefill-size=16", h, 0.0) for h in HELPERS
    ]
    doc = ablation_json(ab)["verdict"]
    assert (
        doc["kind"] == "introduced" and doc["introduced"][0]["config"] == "chunked-prefill-size=16"
    )
    assert v.step == Step.INTRODUCED and v.step_configs == ("chunked-prefill-size=16",)
    assert sweep_exit(tmp_path, p, stores) == 1


def test_a_divergence_on_a_few_samples_of_a_bit_exact_base_is_introduced_on_them():
    # 3 of 32 samples orders of magnitude above rounding: too few for a test over all, each
    # one evidence on its own (the base bit-exact everywhere)
    rng = np.random.default_rng(5)
    levels = [0.0] * 32
    for i in (4, 11, 23):
        levels[i] = 5e-3
    p = sweep("chunked-prefill-size=16")
    ab = read(
        p,
        {
            "base": store(url(0), DET, noisy(0, 0.0, helpers=("match",))),
            "chunked-prefill-size=16": store(url(1), DET, {"match": rows_at(rng, levels)}),
        },
    )
    (r,) = ab.configs[0].helpers
    assert r.effect == INTRODUCED and r.samples == (4, 11, 23)
    assert ab.verdict.kind == INTRODUCED_KIND
    assert [(i.config, i.samples) for i in ab.verdict.introduced] == [
        ("chunked-prefill-size=16", (4, 11, 23))
    ]


def test_rounding_noise_on_a_bit_exact_base_is_still_nothing_to_remove():
    p = sweep("chunked-prefill-size=16")
    ab = read(
        p,
        {
            "base": store(url(0), DET, noisy(0, 0.0, helpers=("match",))),
            "chunked-prefill-size=16": store(url(1), DET, noisy(1, 1e-12, helpers=("match",))),
        },
    )
    assert ab.configs[0].helpers[0].effect == NOTHING
    assert ab.verdict.kind is VerdictKind.NOT_REPRODUCED and ab.verdict.introduced == ()


def test_helpers_that_read_differently_lead_with_the_weakest_and_name_each(tmp_path):
    rng = np.random.default_rng(9)
    base = {
        "match": rows_at(rng, [5e-3] * 32),
        "decode_cache_hit": rows_at(rng, [0.5] * 32),
    }
    fixed = {"match": rows_at(rng, [0.0] * 32), "decode_cache_hit": rows_at(rng, [0.5] * 32)}
    p = sweep("deterministic=on")
    stores = {"base": store(url(0), INFO, base), "deterministic=on": store(url(1), DET, fixed)}
    ab = read(p, stores)
    kinds = {hv.helper: hv.kind for hv in ab.verdict.helpers}
    assert kinds == {"match": LOCALIZED, "decode_cache_hit": NO_SINGLE}
    assert ab.verdict.kind == NO_SINGLE
    assert [(hv.helper, hv.shape) for hv in ab.verdict.helpers] == [
        ("match", Shape.REMOVED),
        ("decode_cache_hit", Shape.NO_SINGLE),
    ]
    assert ab.verdict.helpers[0].sufficient == ("deterministic=on",)
    assert ab.verdict.helpers[1].tried == ("deterministic=on",)
    assert ab.verdict.step == Step.PAIRS
    assert sweep_exit(tmp_path, p, stores) == 1
