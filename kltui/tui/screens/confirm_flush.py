"""The question before the first flush of a server that may be shared.

`/flush_cache` empties the radix cache for every client of that server; the user decides.
The server's name comes from the command line: shown literally; why ask is `run/flush_gate`'s
typed reasons, said by `words/flush.py` (shown literally too).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from kltui.run.flush_gate import AskReason
from kltui.tui.screens.modal import BoxModal
from kltui.untrusted import safe
from kltui.words.flush import ask_reasons

READ_ONLY_NOTE = (
    "This dashboard is read-only (kltui web --read-only): it cannot flush a server. Cancel "
    "stops the run; start it with --yes-flush to let it flush."
)


def question_text(server: str, reasons: tuple[AskReason, ...], read_only: bool = False) -> Text:
    """The question asked before flushing a server's cache, with why."""
    t = Text()
    t.append("kltui is about to flush the radix cache of ")
    t.append_text(safe(server, style="bold", limit=200))
    t.append(".\n\n")
    t.append("Why ask: ")
    t.append_text(safe(ask_reasons(reasons), limit=400))
    t.append(".\n\n")
    t.append(
        "Every helper calls /flush_cache before its phases, as SGLang's own helpers do. A flush "
        "empties the cache for every client of the server, not only for kltui: their next "
        "requests find no cached prefix.\n\n"
    )
    if read_only:
        t.append(READ_ONLY_NOTE, style="bold")
        return t
    t.append(
        "Asked once per server in this session. --yes-flush (or yes_flush: true in the config) "
        "skips the question.",
        style="dim",
    )
    return t


class ConfirmFlush(BoxModal[bool]):
    """Dismissed with True (flush and run) or False (cancel the run). Read-only (a served
    dashboard a reviewer watches): only Cancel; the viewer must not act on the server."""

    BINDINGS = [
        Binding("y", "answer(True)", "Flush and run", id="flush.yes"),
        Binding("n,escape", "answer(False)", "Cancel", id="flush.no"),
    ]

    BOX = Vertical

    def __init__(
        self, server: str, reasons: tuple[AskReason, ...], *, read_only: bool = False
    ) -> None:
        super().__init__()
        self.server = server
        self.reasons = reasons
        self.read_only = read_only

    def box_title(self) -> Text:
        """Which server would be flushed."""
        return Text.assemble("flush ", safe(self.server, limit=60), "?")

    def box_subtitle(self) -> str:
        """The keys that answer (read-only: only cancel)."""
        return "n / esc cancel" if self.read_only else "y flush · n / esc cancel"

    def body(self) -> ComposeResult:
        """The question and its two buttons."""
        yield Static(question_text(self.server, self.reasons, self.read_only), id="flush-question")
        with Horizontal(id="flush-buttons"):
            yield Button(
                "Flush and run", variant="warning", id="flush-yes", disabled=self.read_only
            )
            yield Button("Cancel", variant="primary", id="flush-no")

    def on_mount(self) -> None:
        """Focus Cancel."""
        # the safe answer has the focus: Enter alone never flushes a shared server
        self.query_one("#flush-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Answer with the button pressed."""
        event.stop()
        self.dismiss(event.button.id == "flush-yes")

    def action_answer(self, yes: bool) -> None:
        """Answer yes or no (never yes when read-only)."""
        if yes and self.read_only:
            return
        self.dismiss(yes)
