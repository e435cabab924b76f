"""The dumper drill-down's module table: which module of the decode step first differs from the
fresh prefill, what inherits it, and whether prefill is M-invariant. Takes the result of
`kltui.dumps.analyze.analyze` (or the JSON of `kltui dumps`); computes nothing itself."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Static

from kltui.dumps.render import module_table, steps_table
from kltui.tui.screens.modal import BoxModal
from kltui.tui.widgets.parts import part
from kltui.untrusted import safe


def dumps_view(result: dict, node: DOMNode) -> Group:
    """A dumps analysis as a renderable: verdict (coloured by `node`'s parts), module table,
    decode steps."""
    verdict = "dumps--identical" if result.get("identical") else "dumps--differs"
    parts: list[RenderableType] = [
        safe(result.get("verdict", ""), part(node, verdict)),
        Text(""),
    ]
    step = result.get("decode_step")
    title = (
        f"modules at decode step {step} (position {result.get('position')})"
        if step is not None
        else "modules at the last aligned decode step"
    )
    parts.append(module_table(result.get("modules", []), title))
    if result.get("steps"):
        parts += [Text(""), steps_table(result["steps"])]
    pre = result.get("prefill") or {}
    if pre and not pre.get("identical", True):
        parts += [
            Text(""),
            module_table(
                pre.get("modules", []),
                f"prompt prefill M={pre.get('m_prompt')} vs M={pre.get('m_fresh')}",
            ),
        ]
    return Group(*parts)


class DumpsScreen(BoxModal):
    """Modal module table; `result` is the analysis dict."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close", id="dumps.close")]

    COMPONENT_CLASSES = {"dumps--identical", "dumps--differs"}

    BOX_TITLE = "dumper drill-down: decode vs fresh prefill"

    def __init__(self, result: dict) -> None:
        super().__init__()
        self.result = result

    def body(self) -> ComposeResult:
        """The module table."""
        yield Static(dumps_view(self.result, self), id="dumps-table")
