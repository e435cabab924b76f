"""Everything behind the diagnosis line: evidence, suspects and the next step, per server.

The next step of a shape-variant kernel is the dumper drill-down; `u` asks the app to open it
(`KltuiApp.open_dumps`) for that server (else the first one diagnosed), so the screen never needs
to know how the drill-down is run.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Static

from kltui.readings.diagnosis import Diagnosis
from kltui.tui.screens.modal import BoxModal
from kltui.tui.widgets.diagnosis import BADGE_CLASSES, badge
from kltui.untrusted import safe
from kltui.words.diagnosis import said


def diagnosis_group(diagnoses: list[Diagnosis], node: DOMNode) -> Group:
    """Every diagnosis with its evidence and advice, as a renderable."""
    parts: list = []
    if not diagnoses:
        parts.append(Text("no helper has finished yet", style="dim"))
    for d in diagnoses:
        head = badge(d, node)
        head.append(" ")
        head.append_text(safe(d.server, style="bold"))
        text = said(d)
        parts += [head, safe(text.label)]
        for title, lines in (("evidence", text.evidence), ("suspects", text.suspects)):
            if lines:
                parts.append(Text(title, style="bold"))
                parts += [Text("  · ").append_text(safe(x)) for x in lines]
        if text.next_step:
            parts.append(Text("next: ", style="bold").append_text(safe(text.next_step)))
        if d.action == "dumps":
            parts.append(Text("u: open the dumper drill-down for this server", style="dim"))
        parts.append(Text(""))
    return Group(*parts)


class DiagnosisScreen(BoxModal):
    """The modal showing the run's diagnosis in full."""

    BINDINGS = [
        Binding("escape,q,d", "app.pop_screen", "Close", id="diagnosis.close"),
        Binding("u", "dumps", "Dumper drill-down", id="diagnosis.dumps"),
    ]

    COMPONENT_CLASSES = BADGE_CLASSES  # the condition badges, coloured in app.tcss

    BOX_TITLE = "diagnosis"

    def __init__(self, diagnoses: list[Diagnosis]) -> None:
        super().__init__()
        self.diagnoses = list(diagnoses)

    def body(self) -> ComposeResult:
        """The diagnosis, filled in once mounted."""
        yield Static(id="diagnosis-detail")

    def on_mount(self) -> None:
        """Fill in the diagnosis once the screen is styled."""
        # filled once the screen is styled: its badges take their colours from its CSS
        self.query_one("#diagnosis-detail", Static).update(diagnosis_group(self.diagnoses, self))

    def action_dumps(self) -> None:
        """Open the dumper drill-down for the server the diagnosis points to."""
        # the server the diagnosis sends to the drill-down, else the first one diagnosed: a
        # user may want the module table of any server, recommended or not
        wanted = [d for d in self.diagnoses if d.action == "dumps"] or self.diagnoses
        if not wanted:
            self.app.notify("no server diagnosed yet", timeout=3)
            return
        self.app.open_dumps(wanted[0].server)  # type: ignore[attr-defined]  # KltuiApp's
