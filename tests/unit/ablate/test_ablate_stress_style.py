"""`kltui ablate`'s console marks --stress's line bold red when the sweep's finding is a state
bug under load, by its kind: the line of no bug ("no state bug under load ...") holds the words
"state bug" too, and read bold red before."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from kltui.outputs import ablation as console_out
from kltui.outputs import ablation_rows
from kltui.readings.ablation_outcome import outcome
from kltui.readings.ablation_stress import StressedConfig, SweepStress, SweepStressKind
from kltui.run.sweep_manifest import load
from kltui.words.ablation_stress import stress_line

SWEEP = Path(__file__).parents[2] / "tui" / "data" / "sweep-stress"
CLEAN = StressedConfig("k2", "clean", {})


def _styles_of(line: str, found: SweepStress, monkeypatch) -> set[str]:
    """The styles the console printed `line` with."""
    for module in (console_out, ablation_rows):
        monkeypatch.setattr(module, "read_stress", lambda _sweep: found, raising=False)
    sweep = load(SWEEP)
    console = Console(file=io.StringIO(), width=400, color_system="truecolor", record=True)
    console_out.print_result(console, sweep, outcome(sweep))
    printed = console._record_buffer  # noqa: SLF001 - what was printed, with its styles
    return {str(seg.style) for seg in printed if len(seg.text) > 20 and seg.text in line}


@pytest.mark.parametrize(
    ("kind", "loud"),
    [(SweepStressKind.NO_BUG, False), (SweepStressKind.EVERYWHERE, True)],
)
def test_the_stress_line_is_bold_red_for_a_state_bug_only(kind, loud, monkeypatch):
    bug = () if kind is SweepStressKind.NO_BUG else (CLEAN,)
    found = SweepStress(kind, "light", (CLEAN,), bug, ())
    line = stress_line(found)
    assert "state bug" in line  # the words alone cannot tell the two apart
    styles = _styles_of(line, found, monkeypatch)
    assert ("bold red" in styles) is loud, styles
