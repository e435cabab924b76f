"""The verdict on *why*: condition 1 (kernels) vs condition 2 (a state bug), and what next."""

from __future__ import annotations

from rich.text import Text
from textual.dom import DOMNode
from textual.widgets import Static

from kltui.session.diagnosis import Diagnosis
from kltui.tui.widgets.parts import part
from kltui.untrusted import safe

# the component class of each condition's badge, coloured in app.tcss
CONDITION_CLASS = {
    "exact": "condition--exact",
    "1": "condition--1",
    "2": "condition--2",
    "1+2": "condition--2",
}
BADGE_CLASSES = {"condition--badge", *CONDITION_CLASS.values()}
CONDITION_LABEL = {
    "exact": "EXACT",
    "1": "COND 1",
    "2": "COND 2",
    "1+2": "COND 1+2",
    "unknown": "…",
}


def badge(d: Diagnosis, node: DOMNode) -> Text:
    """The condition badge, styled by `node`'s component classes (BADGE_CLASSES)."""
    names = ["condition--badge"]
    if d.kind in CONDITION_CLASS:
        names.append(CONDITION_CLASS[d.kind])
    label = CONDITION_LABEL.get(d.kind, d.kind)
    # The style goes on the span, not on the Text: a Text's own style would colour everything
    # the caller appends after the badge (the whole diagnosis line came out reversed).
    t = Text()
    t.append(f" {label} ", style=part(node, *names))
    return t


class DiagnosisBar(Static):
    """The one-line-per-server diagnosis at the bottom of the dashboard."""

    DEFAULT_CLASSES = "panel"  # its look: `.panel` in app.tcss
    COMPONENT_CLASSES = BADGE_CLASSES | {"diagnosis--error"}

    def show(
        self,
        diagnoses: list[Diagnosis],
        multi: bool,
        pending: int = 0,
        error: str | None = None,
        ended: bool = False,
    ) -> None:
        """`error`: the run's error line (`kltui check`'s); `ended`: no helper will finish."""
        # Until every helper has finished, the comparison between helpers is incomplete.
        self.border_title = (
            "diagnosis"
            if not pending
            else (f"diagnosis · provisional, {pending} helper{'s' if pending > 1 else ''} to go")
        )
        self.border_subtitle = "d: evidence and next step" if diagnoses else ""
        lines = []
        # the run's error is the one thing to read: a small terminal gives it its lines
        self.set_class(bool(error), "-error")
        if error:
            lines.append(safe(error, style=part(self, "diagnosis--error"), limit=400))
        if not diagnoses and not error:
            wait = (
                "no diagnosis: no helper finished" if ended else "waiting for a helper to finish…"
            )
            lines.append(Text(wait, style="dim"))
        for d in diagnoses:
            t = badge(d, self)
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
