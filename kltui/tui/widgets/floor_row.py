"""The helper panel's line under cross_engine: each engine's own noise (floors) beside the gap,
and how the gap reads against them (the words are words/floors')."""

from __future__ import annotations

from rich.text import Text

from kltui import fmt
from kltui.metrics.floors import FloorKind
from kltui.metrics.summary import Summary
from kltui.readings.floors import floors_of, kind_of
from kltui.words.floors import floor_value, short_line


def floor_cells(summary: Summary | None) -> tuple[Text, Text, Text, Text] | None:
    """(label, reading, the two floors, the gap) for cross_engine's second line; None when the
    helper measured no floors (another helper, or an older recording)."""
    fl = floors_of(summary.figures) if summary is not None and not summary.live else None
    if fl is None:
        return None
    kind = kind_of(fl)
    style = "bold" if kind in (FloorKind.ABOVE, FloorKind.FLOOR_ZERO) else "dim"
    floors = Text(no_wrap=True)
    floors.append("floor SGLang ", style="dim")
    floors.append(floor_value(fl, "sglang"))
    floors.append(" · vLLM ", style="dim")
    floors.append(floor_value(fl, "vllm"))
    got = fl.get("gap")
    gap: dict = got if isinstance(got, dict) else {}
    gap_t = Text(no_wrap=True)
    gap_t.append("gap ", style="dim")
    gap_t.append(fmt.sci(gap.get("avg_k3")))
    return Text("└ floors", style="dim"), Text(short_line(fl), style=style), floors, gap_t
