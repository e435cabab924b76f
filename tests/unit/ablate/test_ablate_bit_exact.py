"""Issue 59: a sweep for bit-exactness. `--threshold 0` asks for avg_kl_div exactly 0; the
sweep reads any nonzero base as the divergence and names the knob that takes it to exactly 0,
sample by sample (the 1e-9-floored paired test sees nothing down there); chance is ruled out by
the sign test over the samples the base differs on."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from kltui.ablate.sweep import MEASURED, ConfigRun, Sweep
from kltui.cli.run_checks import check_numbers
from kltui.errors import UsageError
from kltui.metrics.k3 import within_threshold
from kltui.readings.ablation import (
    INCONCLUSIVE,
    INTRODUCED,
    INTRODUCED_KIND,
    LOCALIZED,
    NOT_REPRODUCED,
    REMOVED,
    read,
)
from kltui.readings.ablation_exact import PairedTest
from kltui.readings.ablation_outcome import exit_code, reading
from kltui.readings.paired import STRAY_ULP_FLOOR
from kltui.words.ablation_json import ablation_json
from tests.unit.ablate.test_ablate_reading import INFO, rows_at, store, sweep, url

DET = INFO | {"enable_deterministic_inference": True}


def stores(base_levels, knob_levels, threshold):
    rng = np.random.default_rng(3)
    return {
        "base": store(url(0), INFO, {"match": rows_at(rng, base_levels)}, threshold=threshold),
        "deterministic=on": store(
            url(1), DET, {"match": rows_at(rng, knob_levels)}, threshold=threshold
        ),
    }


def test_threshold_0_passes_exactly_0_only():
    assert within_threshold(0.0, 0.0)
    assert not within_threshold(1e-300, 0.0)
    assert not within_threshold(float("nan"), 0.0)
    assert within_threshold(1e-4, 1e-3) and not within_threshold(1e-3, 1e-3)


@pytest.mark.parametrize("value, ok", [(0.0, True), (1e-15, True), (-1e-3, False)])
def test_threshold_0_is_accepted_and_below_0_refused(value, ok):
    args = argparse.Namespace(threshold=value, tail_threshold=None)
    if ok:
        check_numbers(args)
    else:
        with pytest.raises(UsageError, match="must be a finite number >= 0"):
            check_numbers(args)


def test_a_knob_that_takes_a_nonzero_base_to_exactly_0_is_localized(tmp_path):
    p = sweep("deterministic=on")
    st = stores([7e-13] * 16, [0.0] * 16, threshold=0.0)
    ab = read(p, st)
    (r,) = ab.configs[0].helpers
    assert (r.effect, r.test, r.level) == (REMOVED, PairedTest.SIGN, 0.0)
    assert r.lower is not None and (r.lower.n, r.lower.higher, r.lower.lower) == (16, 16, 0)
    assert ab.floor == 0.0 and ab.diverging == ("match",)
    assert ab.verdict.kind == LOCALIZED
    assert ab.verdict.helpers[0].sufficient == ("deterministic=on",)
    assert ablation_json(ab)["floor"] == 0.0
    runs = [ConfigRun(c, c.name, status=MEASURED, store=st[c.name]) for c in p.configs]
    s = Sweep(tmp_path, "launch", runs=runs)
    assert exit_code(s, reading(s)) == 0


def test_the_same_sweep_at_the_default_gate_is_not_reproduced():
    ab = read(sweep("deterministic=on"), stores([7e-13] * 16, [0.0] * 16, threshold=1e-3))
    assert ab.verdict.kind == NOT_REPRODUCED and ab.floor == STRAY_ULP_FLOOR


def test_a_base_that_differs_on_too_few_samples_is_inconclusive():
    # 3 of 16 samples differ in the base: a knob at 0 everywhere may be chance (p = 1/8)
    base = [7e-13 if i in (2, 5, 9) else 0.0 for i in range(16)]
    ab = read(sweep("deterministic=on"), stores(base, [0.0] * 16, threshold=0.0))
    (r,) = ab.configs[0].helpers
    assert r.effect == INCONCLUSIVE and r.lower is not None and r.lower.higher == 3
    assert ab.verdict.kind != LOCALIZED


def test_a_knob_that_breaks_a_bit_exact_base_below_the_floor_is_introduced():
    ab = read(sweep("deterministic=on"), stores([0.0] * 16, [7e-13] * 16, threshold=0.0))
    (r,) = ab.configs[0].helpers
    assert r.effect == INTRODUCED and r.higher is not None and r.higher.higher == 16
    assert ab.verdict.kind == INTRODUCED_KIND
