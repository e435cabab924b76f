"""Everything behind the diagnosis line: evidence, suspects and the next step, per server.

The next step of a shape-variant kernel is the dumper drill-down; `u` asks the app to open it
(`KltuiApp.open_dumps`) for that server (else the first one diagnosed), so the screen never needs
to know how the drill-down is run. The statistics behind a reading (the tests' p-values and
limits) are folded under the verdict and its evidence until `space` shows them, as `kltui check`
prints them only with `--explain` (issue 59).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Static

from kltui.readings.diagnosis import Diagnosis
from kltui.tui.screens.modal import BoxModal
from kltui.tui.widgets.diagnosis import BADGE_CLASSES, badge
from kltui.untrusted import safe
from kltui.words import evidence as evidence_words
from kltui.words.diagnosis import said
from kltui.words.screen_panels import statistics_fold as fold_words


def statistics_fold(n: int, shown: bool) -> Text:
    """The line that says the statistics are folded (how many lines) or how to fold them."""
    return Text(fold_words(n, shown), style="dim")


BULLET = "  · "


def _bullets(title: str, lines: list[str]) -> list[RenderableType]:
    """A title over its bullets; a bullet that wraps goes on under its own first word (a
    hanging indent), not at the left edge under the bullet."""
    grid = Table.grid()
    grid.add_column(width=len(BULLET), no_wrap=True)
    grid.add_column(ratio=1)
    for x in lines:
        grid.add_row(BULLET, safe(x))
    return [Text(title, style="bold"), grid]


def one_diagnosis(d: Diagnosis, node: DOMNode, statistics: bool) -> list[RenderableType]:
    """A diagnosis as lines: the verdict first, then its evidence (the statistics' lines only
    when `statistics`, else one line saying how many are folded), suspects and next step."""
    head = badge(d, node)
    head.append(" ")
    head.append_text(safe(d.server, style="bold"))
    text = said(d, explain=False)
    parts: list[RenderableType] = [head, safe(text.label)]
    if text.evidence:
        parts += _bullets("evidence", text.evidence)
    stats = [evidence_words.line(e) for e in d.evidence if e.statistic]
    if stats:
        if statistics:
            parts += _bullets("statistics", stats)
        parts.append(statistics_fold(len(stats), statistics))
    if text.suspects:
        parts += _bullets("suspects", text.suspects)
    if text.next_step:
        parts.append(Text("next: ", style="bold").append_text(safe(text.next_step)))
    if d.action == "dumps":
        parts.append(Text("u: open the dumper drill-down for this server", style="dim"))
    return parts


def diagnosis_group(diagnoses: list[Diagnosis], node: DOMNode, statistics: bool = True) -> Group:
    """Every diagnosis with its evidence and advice, as a renderable (`statistics` False: the
    statistics' lines folded, as `kltui check` prints them without `--explain`)."""
    parts: list = []
    if not diagnoses:
        parts.append(Text("no helper has finished yet", style="dim"))
    for d in diagnoses:
        parts += one_diagnosis(d, node, statistics)
        parts.append(Text(""))
    return Group(*parts)


class DiagnosisScreen(BoxModal):
    """The modal showing the run's diagnosis in full."""

    BINDINGS = [
        Binding("escape,q,d", "app.pop_screen", "Close", id="diagnosis.close"),
        Binding("u", "dumps", "Dumper drill-down", id="diagnosis.dumps"),
        # the statistics behind a reading lose most readers: folded until asked for
        Binding("space", "statistics", "Statistics", id="diagnosis.statistics"),
    ]

    COMPONENT_CLASSES = BADGE_CLASSES  # the condition badges, coloured in app.tcss

    BOX_TITLE = "diagnosis"

    def __init__(self, diagnoses: list[Diagnosis]) -> None:
        super().__init__()
        self.diagnoses = list(diagnoses)
        self.statistics = False  # the statistics' lines, folded until `space`

    def body(self) -> ComposeResult:
        """The diagnosis, filled in once mounted."""
        yield Static(id="diagnosis-detail")

    def on_mount(self) -> None:
        """Fill in the diagnosis once the screen is styled."""
        # filled once the screen is styled: its badges take their colours from its CSS
        self.redraw()

    def redraw(self) -> None:
        """The diagnoses, their statistics folded or shown."""
        group = diagnosis_group(self.diagnoses, self, self.statistics)
        self.query_one("#diagnosis-detail", Static).update(group)

    def action_statistics(self) -> None:
        """Show the statistics' lines, or fold them again."""
        self.statistics = not self.statistics
        self.redraw()

    def action_dumps(self) -> None:
        """Open the dumper drill-down for the server the diagnosis points to."""
        # the server the diagnosis sends to the drill-down, else the first one diagnosed: a
        # user may want the module table of any server, recommended or not
        wanted = [d for d in self.diagnoses if d.action == "dumps"] or self.diagnoses
        if not wanted:
            self.app.notify("no server diagnosed yet", timeout=3)
            return
        self.app.open_dumps(wanted[0].server)  # type: ignore[attr-defined]  # KltuiApp's
