"""Every screen's key bindings, grouped for the help screen and the keymap check."""

from __future__ import annotations

from textual.binding import Binding

from kltui.tui.screens.compare import CompareScreen
from kltui.tui.screens.diagnosis import DiagnosisScreen
from kltui.tui.widgets.heatmap import Heatmap
from kltui.tui.widgets.samples import SampleTable


def binding_groups() -> list[tuple[str, list[Binding]]]:
    from kltui.tui.app import KltuiApp  # here: the app itself lists its bindings
    from kltui.tui.screens.drilldown import DrillDown as _Drill

    def own(cls) -> list[Binding]:
        return [b for b in cls.BINDINGS if isinstance(b, Binding)]

    return [
        ("Dashboard", own(KltuiApp)),
        ("Heatmap", own(Heatmap)),
        ("Sample table", own(SampleTable) + [Binding("enter", "open", "Drill down")]),
        ("Drill-down", own(_Drill)),
        ("Diagnosis", own(DiagnosisScreen)),
        ("Servers compared", own(CompareScreen)),
        (
            "Anywhere",
            [
                Binding("ctrl+p", "command_palette", "Command palette"),
                Binding("tab", "focus_next", "Next panel"),
            ],
        ),
    ]


def all_binding_ids() -> set[str]:
    return {b.id for _, group in binding_groups() for b in group if b.id}
