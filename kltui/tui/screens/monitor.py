"""`kltui monitor` in the TUI: the probes so far, newest first (when, how long, the load, the
verdict, the reading, what changed, marked), each helper's avg_kl_div along the probes as a strip
on the fixed k3 scale, and the highlighted probe in full. Enter on a probe opens its dashboard.

It shows what the monitor's feed (`tui/monitor_feed.MonitorFeed`) holds, through
`outputs/monitor_rows`; it computes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from kltui.outputs.monitor_rows import COLUMNS, ProbeRow, head_line, helpers_of, probe_rows, series
from kltui.run.monitor import ProbeResult
from kltui.tui import heat
from kltui.tui.monitor_feed import MonitorFeed
from kltui.tui.screens.modal import BoxModal
from kltui.tui.widgets.kstrip import K3Strip
from kltui.untrusted import safe
from kltui.words.screen_panels import probe_strip_label

REDRAW_S = 0.5


class ProbeTable(DataTable):
    """The probes, a row each (keyed by the probe's number)."""

    numbers: list[int] = []  # the probe of each row, top to bottom

    def show(self, rows: list[ProbeRow]) -> None:
        """The rows again: the cursor follows the newest probe from the top row, and stays on
        the probe it was moved to otherwise."""
        keep = self.cursor_row
        key = self.numbers[keep] if 0 < keep < len(self.numbers) else None
        self.clear(columns=not self.columns)
        if not self.columns:
            self.add_columns(*COLUMNS)
        self.numbers = [r.number for r in rows]
        for r in rows:
            style = "bold" if r.changed else ("dim" if not r.failed else "")
            cells = [safe(c, style) for c in r.cells]
            if r.changed:
                cells[-1] = safe("▲ " + r.cells[-1], "bold")
            self.add_row(*cells, key=str(r.number))
        if key in self.numbers:
            self.move_cursor(row=self.numbers.index(key))


class MonitorScreen(BoxModal[int | None]):
    """The probes of a monitor; dismissed with the probe whose dashboard to open (Enter) or
    None (back to the dashboard as it is)."""

    BINDINGS = [
        Binding("escape", "close", "Dashboard", id="monitor.close"),
        # the monitor's home screen: q quits from here too (a modal screen's keys come first)
        Binding("q", "app.quit", "Quit", id="monitor.quit"),
    ]

    BOX = Vertical
    BOX_TITLE = "kltui monitor · canary probes"
    BOX_SUBTITLE = "enter opens a probe's dashboard · esc dashboard · q quit"

    def __init__(self, source: MonitorFeed, palette: heat.Palette | None = None) -> None:
        super().__init__()
        self.source = source
        self.palette = palette
        self._seen = -1
        self._rows: list[ProbeRow] = []

    def body(self) -> ComposeResult:
        """The head line, a strip per helper, the probes, the highlighted probe in full."""
        yield Static(id="monitor-head")
        yield Vertical(id="monitor-strips")
        yield ProbeTable(id="monitor-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="monitor-detail")

    def on_mount(self) -> None:
        """Fill it, follow the probes."""
        self.redraw()
        self.query_one(ProbeTable).focus()
        self.set_interval(REDRAW_S, self.redraw)

    async def _strips(self, history: Sequence[ProbeResult]) -> None:
        box = self.query_one("#monitor-strips", Vertical)
        await box.remove_children()
        for helper in helpers_of(history):
            k3, a, b = series(history, helper)
            last = k3[-1] if k3.size else float("nan")
            label = probe_strip_label(helper, k3.size, last)
            await box.mount(Static(safe(label, "dim"), classes="monitor-strip-label"))
            await box.mount(K3Strip(k3, a, b, self.palette, stretch=False, classes="monitor-strip"))

    def redraw(self, force: bool = False) -> None:
        """Everything again when a probe began or ended."""
        src = self.source
        if src.version == self._seen and not force:
            return
        self._seen = src.version
        history = list(src.history)
        mon = src.monitor
        head = head_line(src.servers, mon.every, len(history), src.listen)
        running = f"probe {src.running} running" if src.running else "waiting for the next probe"
        self.query_one("#monitor-head", Static).update(
            Text.assemble(safe(head), "\n", (running, "bold"))
        )
        self.run_worker(self._strips(history), group="strips", exclusive=True)
        self._rows = probe_rows(history)
        self.query_one(ProbeTable).show(self._rows)
        self._detail()

    def _detail(self) -> None:
        row = self.query_one(ProbeTable).cursor_row
        text = self._rows[row].detail if 0 <= row < len(self._rows) else "no probe ended yet"
        lines = [safe(line, "dim") for line in text.split("\n")]
        self.query_one("#monitor-detail", Static).update(Text("\n").join(lines))

    def on_data_table_row_highlighted(self, msg: DataTable.RowHighlighted) -> None:
        """The highlighted probe in full under the table."""
        msg.stop()
        self._detail()

    def on_data_table_row_selected(self, msg: DataTable.RowSelected) -> None:
        """Enter on a probe: its dashboard."""
        msg.stop()
        if msg.row_key.value is not None:
            self.dismiss(int(msg.row_key.value))

    def action_close(self) -> None:
        """Back to the dashboard as it is."""
        self.dismiss(None)
