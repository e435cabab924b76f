"""Every Problem of the current run (HTTP errors, malformed payloads, alignment faults)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Static

from kltui.session.events import Problem
from kltui.tui.screens.modal import BoxModal
from kltui.tui.widgets.parts import part
from kltui.untrusted import safe


def problems_table(problems: list[Problem], node: DOMNode) -> Table:
    """The run's problems as a table; its marks are `node`'s parts, coloured in app.tcss."""
    t = Table(expand=True, show_lines=False, box=None, header_style="bold")
    t.add_column("", width=2)
    t.add_column("source", ratio=1, overflow="fold")
    t.add_column("phase", width=10)
    t.add_column("message", ratio=3, overflow="fold")
    if not problems:
        t.add_row("", Text("no problems", style="dim"), "", "")
    for p in problems:
        mark = Text("✗" if p.fatal else "⚠", style=part(node, f"problems--{kind(p)}"))
        where = p.phase or ""
        if p.helper:
            where = f"{p.helper}/{where}" if where else p.helper
        t.add_row(mark, safe(p.source), safe(where), safe(p.message))
    return t


def kind(p: Problem) -> str:
    """`fatal` for a problem that ended the run, else `warn`."""
    return "fatal" if p.fatal else "warn"


class ProblemsScreen(BoxModal):
    """The modal listing the run's problems."""

    BINDINGS = [Binding("escape,q,e", "app.pop_screen", "Close", id="problems.close")]

    COMPONENT_CLASSES = {"problems--fatal", "problems--warn"}

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__()
        self.problems = list(problems)

    def box_title(self) -> str:
        """The title, with how many problems."""
        return f"problems ({len(self.problems)})"

    def body(self) -> ComposeResult:
        """The problems table."""
        yield Static(problems_table(self.problems, self), id="problems-table")
