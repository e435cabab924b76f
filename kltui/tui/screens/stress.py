"""Quiet vs stressed, side by side: a `--stress` session's two runs of the same prompt set, per
helper (`readings/stress.StressReading`): each run's avg_kl_div and status, then the comparison
(bit for bit on a deterministic server, the paired test otherwise), where a state bug first
shows and what the background traffic was doing then. Nothing is computed here."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from kltui import fmt
from kltui.readings.stress import StressReading
from kltui.tui.screens.modal import BoxModal
from kltui.untrusted import safe
from kltui.words.stress import coverage_lines, helper_line, note_lines, scope, traffic_lines

VERDICT_COLOUR = {"state bug under load": "kl-bad", "identical": "kl-ok", "clean": "kl-ok"}


def stress_group(reading: StressReading, vars_: dict) -> Group:
    """The reading as one renderable: verdict, the side-by-side table, the traffic."""
    colour = vars_.get(VERDICT_COLOUR.get(reading.verdict, "kl-warn"), "")
    head = Text.assemble(("quiet vs stressed ", "bold"), (f"({reading.level}): ", "bold"))
    head.append_text(safe(reading.verdict, style=colour))
    head.append_text(safe(scope(reading)))
    t = Table(box=None, header_style="bold", pad_edge=False, expand=True)
    for col in ("helper", "quiet", "stressed", "samples", "under load", "first difference"):
        t.add_column(col, justify="right" if col in ("quiet", "stressed", "samples") else "left")
    for h in reading.helpers:
        (q, s), (qs, ss) = h.levels, h.statuses
        f = h.first
        first = "–" if f is None else f"sample {f.sample} @ {f.first} ({f.side})"
        t.add_row(
            safe(h.helper),
            Text(f"{fmt.sci(q)} {qs}"),
            Text(f"{fmt.sci(s)} {ss}"),
            f"{h.identical}/{h.compared}" if h.deterministic else str(h.compared),
            safe(h.verdict, style=vars_.get(VERDICT_COLOUR.get(h.verdict, "kl-warn"), "")),
            Text(first),
        )
    parts: list = [head, t, Text("")]
    for h in reading.helpers:
        if h.state_bug or not h.deterministic:
            parts.append(safe("· " + helper_line(h)))
    parts.extend(safe("· " + line, style="dim") for line in traffic_lines(reading))
    parts.extend(safe("· " + line) for line in coverage_lines(reading))
    parts.extend(safe("· " + n, style="dim") for n in note_lines(reading))
    return Group(*parts)


class StressScreen(BoxModal):
    """The modal of a --stress session's reading (opened when its stressed run ends)."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close", id="stress.close")]

    BOX_TITLE = "--stress · quiet vs stressed, same prompt set"

    def __init__(self, reading: StressReading, vars_: dict) -> None:
        super().__init__()
        self.reading = reading
        self.vars_ = dict(vars_)

    def body(self) -> ComposeResult:
        """The reading."""
        yield Static(stress_group(self.reading, self.vars_), id="stress-detail")
