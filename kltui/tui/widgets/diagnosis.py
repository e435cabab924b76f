"""The verdict on *why*: condition 1 (kernels) vs condition 2 (a state bug), and what next."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from kltui.diagnosis import Diagnosis
from kltui.tui.text import safe

CONDITION_STYLE = {"exact": "kl-ok", "1": "kl-warn", "2": "kl-bad", "1+2": "kl-bad"}
CONDITION_LABEL = {
    "exact": "EXACT",
    "1": "COND 1",
    "2": "COND 2",
    "1+2": "COND 1+2",
    "unknown": "…",
}


def badge(d: Diagnosis, vars_: dict) -> Text:
    colour = vars_.get(CONDITION_STYLE.get(d.kind, ""), "")
    label = CONDITION_LABEL.get(d.kind, d.kind)
    return Text(f" {label} ", style=f"bold reverse {colour}" if colour else "bold reverse")


class DiagnosisBar(Static):
    DEFAULT_CSS = """
    DiagnosisBar {
        height: auto;
        max-height: 5;
        border: round $primary 40%;
        border-title-color: $primary;
        border-subtitle-color: $foreground 60%;
        padding: 0 1;
    }
    """

    def show(self, diagnoses: list[Diagnosis], multi: bool, vars_: dict, pending: int = 0) -> None:
        # Until every helper has finished, the comparison between helpers is incomplete.
        self.border_title = (
            "diagnosis"
            if not pending
            else (f"diagnosis · provisional, {pending} helper{'s' if pending > 1 else ''} to go")
        )
        self.border_subtitle = "d: evidence and next step" if diagnoses else ""
        lines = []
        if not diagnoses:
            lines.append(Text("waiting for a helper to finish…", style="dim"))
        for d in diagnoses:
            t = badge(d, vars_)
            t.append(" ")
            if multi:
                t.append_text(safe(d.server, style="bold"))
                t.append(": ")
            t.append_text(safe(d.label, limit=400))
            lines.append(t)
        if len(diagnoses) == 1 and diagnoses[0].next_step:
            nxt = Text("next: ", style="bold")
            nxt.append_text(safe(diagnoses[0].next_step, limit=300))
            lines.append(nxt)
        self.update(Text("\n").join(lines))
