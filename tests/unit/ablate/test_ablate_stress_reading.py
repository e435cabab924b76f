"""`kltui ablate --stress` across the configurations (`readings/ablation_stress.py`): which
outcome a sweep's stressed runs come to, and the figures it rests on; the lines are
tests/unit/words/test_golden_ablation_sweep.py's."""

from __future__ import annotations

from pathlib import Path

from kltui.ablate.plan import Config
from kltui.ablate.sweep import FAILED, MEASURED, Sweep
from kltui.readings.ablation_outcome import pairs_ran_none
from kltui.readings.ablation_stress import SweepStressKind, read_stress

BUG = "state bug under load"
FIRST = {"sample": 0, "position": 1, "side": "decode"}


def sweep(*verdicts: str | None, status: str = MEASURED) -> Sweep:
    sw = Sweep(Path("/nonexistent"), "launch")
    sw.add([Config("base"), *(Config(f"k{i}") for i in range(1, len(verdicts)))])
    for run, v in zip(sw.runs, verdicts, strict=True):
        run.status = status
        if v is not None:
            helpers = [{"helper": "match", "first_difference": FIRST if v == BUG else None}]
            run.stress = {"verdict": v, "level": "light", "helpers": helpers}
    return sw


def test_no_stress_no_finding():
    assert read_stress(sweep(None, None)) is None
    assert read_stress(sweep(BUG, BUG, status=FAILED)) is None  # only measured ones count


def test_a_bug_in_every_configuration_tried():
    s = read_stress(sweep(BUG, BUG))
    assert s is not None and s.kind is SweepStressKind.EVERYWHERE and s.level == "light"
    assert [c.name for c in s.bug] == ["base", "k1"] and len(s.measured) == 2
    assert s.bug[0].first == ("match", 0, 1, "decode") and s.quiet == ()


def test_a_bug_in_the_base_not_seen_with_a_configuration():
    s = read_stress(sweep(BUG, "clean", "inconclusive"))
    assert s is not None and s.kind is SweepStressKind.NOT_SEEN_WITH
    assert s.quiet == ("k1",)  # an inconclusive run is not a run without the bug


def test_a_bug_the_base_does_not_show_and_none_at_all():
    s = read_stress(sweep("clean", BUG))
    assert s is not None and s.kind is SweepStressKind.NOT_IN_BASE
    assert [c.name for c in s.bug] == ["k1"]
    none = read_stress(sweep("clean", "inconclusive"))
    assert none is not None and none.kind is SweepStressKind.NO_BUG and none.bug == ()
    assert [c.verdict for c in none.measured] == ["clean", "inconclusive"]


def test_pairs_that_ran_none():
    sw = sweep(None, None)
    sw.pairs_asked = True
    assert pairs_ran_none(sw)
    sw.pairs_run = True
    assert not pairs_ran_none(sw)
    sw.pairs_run, sw.base.status = False, FAILED  # the base's failure says it instead
    assert not pairs_ran_none(sw)
    sw.pairs_asked, sw.base.status = False, MEASURED
    assert not pairs_ran_none(sw)
