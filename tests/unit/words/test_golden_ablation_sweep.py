"""A sweep's own lines in words: one golden line per `SweepStressKind` (--stress across the
configurations), the configurations --pairs adds, why it added none, and an interruption;
the sweep's tests assert the reading's kinds and that the views print these."""

from __future__ import annotations

from pathlib import Path

import pytest

from kltui.ablate.plan import Config
from kltui.ablate.sweep import FAILED, MEASURED, Sweep
from kltui.readings.ablation_stress import StressedConfig, SweepStress, SweepStressKind
from kltui.words.ablation_stress import stress_line, verdict_of
from kltui.words.ablation_sweep import (
    INTERRUPTED_LINE,
    PAIRS_NONE_LINE,
    head_line,
    helper_pick,
    nothing_to_show,
    pairs_added,
    sweep_start,
)

BUG = StressedConfig("base", "state bug under load", {}, ("match", 0, 1, "decode"))
BUG2 = StressedConfig("k1", "state bug under load", {})  # no difference recorded
CLEAN = StressedConfig("k2", "clean", {"http://127.0.0.1:1": ["eviction"]})
HEAD = (
    "under --stress light: a state bug under load in 2 of 3 configurations (base: match "
    "sample 0 @ 1 (decode); k1: a difference); the quiet verdict does not cover it"
)
LINES = {
    SweepStressKind.NO_BUG: (
        (CLEAN, StressedConfig("k3", "inconclusive", {})),
        (),
        "under --stress light: no state bug under load (k2 clean (eviction not exercised), "
        "k3 inconclusive)",
    ),
    SweepStressKind.EVERYWHERE: (
        (BUG, BUG2, StressedConfig("k3", "inconclusive", {})),
        (BUG, BUG2),
        f"{HEAD}; no configuration tried removes it",
    ),
    SweepStressKind.NOT_SEEN_WITH: (
        (BUG, BUG2, CLEAN),
        (BUG, BUG2),
        f"{HEAD}; not seen with k2 (one stressed run each, and load is timing: re-run the "
        "sweep to confirm before calling it a fix)",
    ),
    SweepStressKind.NOT_IN_BASE: (
        (BUG, BUG2, CLEAN),
        (BUG, BUG2),
        f"{HEAD}; the base showed none under the same load",
    ),
}


@pytest.mark.parametrize("kind", list(SweepStressKind))
def test_each_stress_outcome(kind):
    measured, bug, text = LINES[kind]
    quiet = ("k2",) if kind is SweepStressKind.NOT_SEEN_WITH else ()
    assert stress_line(SweepStress(kind, "light", measured, bug, quiet)) == text


def test_a_configurations_stressed_verdict():
    assert verdict_of(CLEAN) == "clean (eviction not exercised)"
    assert verdict_of(BUG) == "state bug under load"


def test_the_sweeps_own_lines():
    assert INTERRUPTED_LINE == "interrupted: the configurations above were measured"
    assert PAIRS_NONE_LINE == (
        "--pairs: fewer than two single knobs counted (measured, took effect, moved a helper "
        "the base diverges on): no pairs to run"
    )
    assert sweep_start(["base", "a=b"], "/runs/ablate-a") == (
        "kltui ablate: 2 configurations (base, a=b); sweep folder /runs/ablate-a"
    )
    assert pairs_added(["a+b"]) == "kltui ablate: --pairs adds 1 configuration (a+b)"
    assert pairs_added(["a+b", "a+c"]) == ("kltui ablate: --pairs adds 2 configurations (a+b, a+c)")


def test_the_tui_header():
    sweep = Sweep(Path("/runs/ablate-a"), "launch")
    sweep.add([Config("base"), Config("a=b"), Config("c=d")])
    sweep.runs[0].status, sweep.runs[1].status = MEASURED, FAILED
    assert head_line(sweep) == (
        "launch mode · 3 configurations (1 measured, 1 failed, 1 not run) · sweep running · "
        "folder /runs/ablate-a"
    )
    sweep.total_s = 10.0
    assert "· sweep done ·" in head_line(sweep)
    sweep.interrupted = True
    assert "· sweep interrupted ·" in head_line(sweep)
    assert helper_pick("match", ["match", "decode_cache_hit"]) == (
        "helper match (1 of 2; [ ] switch)"
    )
    assert helper_pick(None, []) == "no helper measured yet"


def test_a_configuration_with_nothing_to_show():
    sweep = Sweep(Path("/runs/ablate-a"), "launch")
    sweep.add([Config("base"), Config("page-size=0")])
    assert nothing_to_show("base", sweep.runs[0]) == (
        "base: nothing to show on the dashboard (not measured yet)"
    )
    sweep.runs[1].failed("page-size=0: exited with code 2", "exited")
    assert nothing_to_show("page-size=0", sweep.runs[1]) == (
        "page-size=0: nothing to show on the dashboard (page-size=0: exited with code 2)"
    )
