"""The legend under `kltui ablate`'s table in words: what each label a helper's cell shows
means (`readings/ablation_kinds.Effect`), one line per label the table shows."""

from __future__ import annotations

from kltui.readings.ablation import Ablation
from kltui.readings.ablation_kinds import Effect
from kltui.readings.paired import STRAY_ULP_FLOOR

NOT_MEASURED_LINE = "–: not measured (its note and its line say why)"

# what each label of a helper's cell means, in the order the legend says them (words apart
# from the kinds: readings/ablation_kinds.Effect)
_LEGEND: dict[Effect, str] = {
    Effect.REMOVED: "at the 1e-9 floor, lower than the base beyond chance (paired per-sample test)",
    Effect.REMOVED_ON: (
        "at rounding level on every sample, where the base sits orders of magnitude above it "
        "on a few samples (named in the verdict)"
    ),
    Effect.REDUCED: "at least 10x lower than the base beyond chance, not to the floor",
    Effect.LOWER: "lower than the base beyond chance, less than 10x",
    Effect.NONE: "not lower than the base beyond chance: this knob does not explain it",
    Effect.WORSE: "higher than the base beyond chance",
    Effect.SAME: "bit-identical to the base on every common sample",
    Effect.INCONCLUSIVE: "too few common samples, or a drop inside the noise",
    Effect.NOTHING: "the base is at the floor on this helper and this configuration stays there",
    Effect.INTRODUCED: (
        "the base is at the floor and this configuration is above it: the knob breaks bit-exactness"
    ),
    Effect.NOT_TESTED: "this configuration's helper tested nothing (its line says why): not a fix",
    Effect.BASE_NOT_TESTED: "the base's helper tested nothing: nothing to compare",
}


def _below_rounding(floor: float) -> dict[Effect, str]:
    """The labels whose words change at a gate below the 1e-9 floor, read sample by sample
    (`--threshold 0`: bit-exact)."""
    at = "bit-exact on every sample" if floor == 0 else f"at or below {floor:g} on every sample"
    return {
        Effect.REMOVED: (
            f"{at}, where the base is above it on enough samples to rule out chance (sign test)"
        ),
        Effect.INCONCLUSIVE: "too few common samples, or the base above the gate on too few",
    }


_UNBRACKETED = (Effect.NOT_TESTED, Effect.BASE_NOT_TESTED)  # the whole cell, no level


def label(e: Effect) -> str:
    """The label as a cell shows it (`words/ablation_config.cell`)."""
    return "(= base)" if e == Effect.SAME else str(e) if e in _UNBRACKETED else f"({e})"


def legend_line(e: Effect, floor: float) -> str:
    """One label's legend line; a gate below the 1e-9 floor (`floor`) reads sample by sample."""
    words = _LEGEND | (_below_rounding(floor) if floor < STRAY_ULP_FLOOR else {})
    return f"{label(e)}: {words[e]}"


def legend(ab: Ablation) -> list[str]:
    """What each label in the table's cells means, for the labels the table shows (plain
    text, one line each: "(none): not lower than the base beyond chance: ...")."""
    shown = {h.effect for c in ab.configs for h in c.helpers}
    out = [legend_line(e, ab.floor) for e in _LEGEND if e in shown]
    if any(not c.measured for c in ab.configs):
        out.append(NOT_MEASURED_LINE)
    return out
