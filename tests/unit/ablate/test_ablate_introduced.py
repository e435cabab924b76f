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
from kltui.readings.ablation_outcome import exit_code, reading
from kltui.words.ablation import next_step, verdict_line
from kltui.words.ablation_config import cell
from kltui.words.ablation_json import ablation_json
from tests.unit.ablate.test_ablate_reading import INFO, noisy, rows_at, store, sweep, url

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
    assert cell(cps.helper("match")).endswith("e-3 (introduced)")  # type: ignore[union-attr]
    assert {h.effect for h in ab.configs[1].helpers} == {NOTHING}
    v = ab.verdict
    assert v.kind == INTRODUCED_KIND
    assert verdict_line(ab).startswith(
        "introduced: chunked-prefill-size=16 introduces a divergence: match 0 -> "
    )
    assert "the base passes at the floor (match 0," in verdict_line(ab)
    assert [(i.config, i.helper) for i in v.introduced] == [
        ("chunked-prefill-size=16", h) for h in ("match", "prefill_cache_hit", "decode_cache_hit")
    ]
    doc = ablation_json(ab)["verdict"]
    assert (
        doc["kind"] == "introduced" and doc["introduced"][0]["config"] == "chunked-prefill-size=16"
    )
    assert "chunked-prefill-size=16 breaks the base's bit-exactness" in (next_step(v) or "")
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
    assert "orders of magnitude above rounding on #4, #11 and #23" in verdict_line(ab)
    assert ab.verdict.introduced[0].samples == (4, 11, 23)


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
    assert ab.verdict.kind == "not reproduced" and ab.verdict.introduced == ()


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
    assert verdict_line(ab).startswith(
        "no single knob overall (localized for match; no single knob for decode_cache_hit): "
        "localized: deterministic=on removes match's divergence ("
    )
    assert "; no single knob explains decode_cache_hit's divergence (" in verdict_line(ab)
    assert sweep_exit(tmp_path, p, stores) == 1
