"""The legend under `kltui ablate`'s table: one golden line per label a helper's cell shows
(`readings/ablation_kinds.Effect`, the base's own cell aside), and the words that change at a
gate below the 1e-9 floor; tests/unit/ablate/test_ablate_legend.py asserts which labels a
table explains and that every medium prints these lines."""

from __future__ import annotations

import pytest

from kltui.readings.ablation_kinds import Effect
from kltui.words.ablation_legend import NOT_MEASURED_LINE, legend_line

LINES = {
    Effect.REMOVED: (
        "(removed): at the 1e-9 floor, lower than the base beyond chance (paired per-sample test)"
    ),
    Effect.REMOVED_ON: (
        "(removed on samples): at rounding level on every sample, where the base sits orders "
        "of magnitude above it on a few samples (named in the verdict)"
    ),
    Effect.REDUCED: "(reduced): at least 10x lower than the base beyond chance, not to the floor",
    Effect.LOWER: "(lower): lower than the base beyond chance, less than 10x",
    Effect.NONE: "(none): not lower than the base beyond chance: this knob does not explain it",
    Effect.WORSE: "(worse): higher than the base beyond chance",
    Effect.SAME: "(= base): bit-identical to the base on every common sample",
    Effect.INCONCLUSIVE: "(inconclusive): too few common samples, or a drop inside the noise",
    Effect.NOTHING: (
        "(nothing to remove): the base is at the floor on this helper and this configuration "
        "stays there"
    ),
    Effect.INTRODUCED: (
        "(introduced): the base is at the floor and this configuration is above it: the knob "
        "breaks bit-exactness"
    ),
    Effect.NOT_TESTED: (
        "not tested: this configuration's helper tested nothing (its line says why): not a fix"
    ),
    Effect.BASE_NOT_TESTED: (
        "base not tested: the base's helper tested nothing: nothing to compare"
    ),
}


@pytest.mark.parametrize("effect", [e for e in Effect if e is not Effect.BASE])
def test_each_label(effect):
    assert legend_line(effect, 1e-9) == LINES[effect]


def test_below_the_floor_a_gate_reads_sample_by_sample():
    assert legend_line(Effect.REMOVED, 0.0) == (
        "(removed): bit-exact on every sample, where the base is above it on enough samples to "
        "rule out chance (sign test)"
    )
    assert legend_line(Effect.REMOVED, 1e-12) == (
        "(removed): at or below 1e-12 on every sample, where the base is above it on enough "
        "samples to rule out chance (sign test)"
    )
    assert legend_line(Effect.INCONCLUSIVE, 0.0) == (
        "(inconclusive): too few common samples, or the base above the gate on too few"
    )
    assert legend_line(Effect.LOWER, 0.0) == LINES[Effect.LOWER]
    assert NOT_MEASURED_LINE == "–: not measured (its note and its line say why)"
