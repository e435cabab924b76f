"""The sweep of `kltui ablate` in the TUI: its configurations as rows (the knob changed, avg_kl_div,
tail fraction, bit-equality with the base, condition, verdict, state), one helper at a time, filled
in as the sweep runs; the verdict under them. Enter on a row opens that configuration's dashboard.

It shows what the sweep's feed (`tui/sweep_feed.SweepFeed`) holds, through
`outputs/ablation_matrix`; it computes nothing.
"""

from __future__ import annotations

from typing import Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from kltui.ablate.sweep import Sweep
from kltui.outputs.ablation_matrix import Live, helpers_of, matrix_rows, verdict_lines
from kltui.readings.ablation import Ablation
from kltui.tui.screens.modal import BoxModal
from kltui.tui.widgets.ablation import SweepMatrix
from kltui.untrusted import safe
from kltui.words.ablation import verdict_line
from kltui.words.ablation_sweep import head_line, helper_pick

REDRAW_S = 0.25  # the matrix follows the sweep at most this often


class SweepSource(Protocol):
    """What the screen reads of a sweep (the feed keeps it up to date)."""

    sweep: Sweep | None
    ab: Ablation | None
    live: dict[str, Live]
    notes: list[str]
    version: int
    shown: str | None


class AblationScreen(BoxModal[str | None]):
    """The matrix of a sweep; dismissed with the configuration whose dashboard to open (Enter)
    or None (back to the dashboard as it is)."""

    BINDINGS = [
        Binding("escape", "close", "Dashboard", id="ablation.close"),
        # the sweep's home screen: q quits from here too (a modal screen's keys come first)
        Binding("q", "app.quit", "Quit", id="ablation.quit"),
        Binding(
            "right_square_bracket",
            "helper(1)",
            "Next helper",
            key_display="]",
            id="ablation.next-helper",
        ),
        Binding("v", "verdict", "Scroll verdict", id="ablation.verdict"),
        Binding(
            "left_square_bracket",
            "helper(-1)",
            "Prev helper",
            key_display="[",
            show=False,
            id="ablation.prev-helper",
        ),
    ]

    BOX = Vertical  # the table scrolls itself
    BOX_TITLE = "kltui ablate · one knob at a time against the base"
    BOX_SUBTITLE = "enter opens a configuration's dashboard · [ ] helper · esc dashboard · q quit"

    def __init__(self, source: SweepSource, vars_: dict, helper: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.vars_ = dict(vars_)
        self.helper = helper
        self._seen = -1

    def body(self) -> ComposeResult:
        """The sweep's line, the matrix, the highlighted row in full, the verdict."""
        yield Static(id="ablation-head")
        yield SweepMatrix(id="ablation-table")
        yield Static(id="ablation-detail")
        # the verdict, the notes and the chain's line can outgrow their share of the screen:
        # they scroll in their own box, which says so on its border (never cut silently)
        with VerticalScroll(id="ablation-verdict-box"):
            yield Static(id="ablation-verdict")

    def on_mount(self) -> None:
        """Fill the matrix, follow the sweep, put the cursor on the configuration shown."""
        self.redraw()
        table = self.query_one(SweepMatrix)
        if self.source.shown in table.names:
            table.move_cursor(row=table.names.index(self.source.shown))
        table.focus()
        self.set_interval(REDRAW_S, self.redraw)

    def helpers(self) -> list[str]:
        """The helpers the matrix can show."""
        return helpers_of(self.source.ab, self.source.live)

    def redraw(self, force: bool = False) -> None:
        """The rows again when the sweep moved."""
        src = self.source
        # the box's scrollbar, once it shows, narrows the text and may wrap it to another line:
        # the count on its border follows the layout as it settles, not only the sweep
        self._mark_cut()
        if src.sweep is None or (src.version == self._seen and not force):
            return
        self._seen = src.version
        names = self.helpers()
        if self.helper not in names:
            self.helper = names[0] if names else None
        rows = matrix_rows(src.sweep, src.ab, self.helper or "", src.live)
        table = self.query_one(SweepMatrix)
        table.show(rows, self.vars_)
        which = helper_pick(self.helper, names)
        head = Text.assemble(safe(head_line(src.sweep)), "\n", (which, "bold"))
        self.query_one("#ablation-head", Static).update(head)
        self._detail(rows)
        lines = verdict_lines(src.sweep, src.ab, src.notes)
        said = verdict_line(src.ab) if src.ab is not None else None
        out = Text()
        for i, line in enumerate(lines):
            if i:
                out.append("\n")
            bold = line == said
            out.append_text(safe(line, "bold" if bold else ""))
        self.query_one("#ablation-verdict", Static).update(out)
        self.call_after_refresh(self._mark_cut)

    def _mark_cut(self) -> None:
        """The verdict box's border says how many of its lines are out of view (above and below
        together) and which key scrolls them."""
        box = self.query_one("#ablation-verdict-box", VerticalScroll)
        below = max(0, box.virtual_size.height - box.scrollable_content_region.height)
        box.set_class(below > 0, "cut")
        if below == 0:
            box.border_subtitle = ""
        elif box.has_focus:
            box.border_subtitle = "↑ ↓ scroll · v back to the matrix"
        else:
            lines = "line" if below == 1 else "lines"
            box.border_subtitle = f"{below} more {lines} · v to scroll"

    def on_descendant_focus(self) -> None:
        """Tab into (or out of) the verdict's box words its border for what keys do there."""
        self._mark_cut()

    def on_descendant_blur(self) -> None:
        self._mark_cut()

    def action_verdict(self) -> None:
        """Focus the verdict's box to scroll it; again, back to the matrix."""
        box = self.query_one("#ablation-verdict-box", VerticalScroll)
        if box.has_focus:
            self.query_one(SweepMatrix).focus()
        else:
            box.focus()
        self.call_after_refresh(self._mark_cut)

    def _detail(self, rows=None) -> None:
        table = self.query_one(SweepMatrix)
        src = self.source
        if src.sweep is None or not table.names:
            return
        if rows is None:
            rows = matrix_rows(src.sweep, src.ab, self.helper or "", src.live)
        row = table.cursor_row
        if 0 <= row < len(rows):
            self.query_one("#ablation-detail", Static).update(safe(rows[row].detail, "dim"))

    def on_data_table_row_highlighted(self, msg: DataTable.RowHighlighted) -> None:
        """The highlighted configuration in full under the matrix."""
        msg.stop()
        self._detail()

    def on_data_table_row_selected(self, msg: DataTable.RowSelected) -> None:
        """Enter on a configuration: its dashboard."""
        msg.stop()
        self.dismiss(msg.row_key.value)

    def action_helper(self, step: int) -> None:
        """Show the next (or previous) helper's figures."""
        names = self.helpers()
        if not names:
            return
        i = names.index(self.helper) if self.helper in names else -step
        self.helper = names[(i + step) % len(names)]
        self.redraw(force=True)

    def action_close(self) -> None:
        """Back to the dashboard as it is."""
        self.dismiss(None)
