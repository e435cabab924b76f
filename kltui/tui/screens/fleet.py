"""The fleet of a `--router` run: replicas as rows, helpers as columns, a verdict per cell
against the reference replica, and the agreement groups (`readings/fleet.py`). Enter on a row opens
that replica's own dashboard (its first helper selected)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from kltui.readings.fleet_model import Fleet
from kltui.session.servers import text
from kltui.tui.screens.modal import BoxModal
from kltui.untrusted import safe
from kltui.words.fleet import failure_line, replica_cells, summary_line
from kltui.words.screen_panels import fleet_failed, fleet_group

# cell verdict -> theme variable of its colour (app.tcss's scale colours)
VERDICT_COLOUR = {"same": "kl-ok", "reference": "kl-ok", "differs": "kl-warn"}
GLYPH = {"same": "= same", "reference": "● reference", "differs": "≠ differs"}


def fleet_head(f: Fleet, vars_: dict) -> Text:
    """The summary (and, under `--fleet-require identical`, why the fleet failed it) and the
    groups, above the table."""
    colour = {True: "kl-ok", False: "kl-warn", None: ""}[f.identical]
    out = Text.assemble(("router ", "bold")).append_text(safe(str(f.router)))
    workers = f.workers
    out.append(
        f" · {len(workers)} worker(s), {sum(1 for w in workers if w.get('tested'))} checked\n"
    )
    if (
        failure := failure_line(f)
    ) is not None:  # --fleet-require identical: why the run failed, first
        why = fleet_failed(failure)
        out.append_text(safe(why, style=f"bold {vars_.get('kl-bad', '')}".strip()))
        out.append("\n")
    out.append_text(safe(summary_line(f), style=vars_.get(colour, "")))
    for gi, g in enumerate(f.groups):
        settings = [(k, text(v)) for k, v in g.settings.items()]
        line = fleet_group(gi + 1, len(g.replicas), settings)
        out.append("\n")
        out.append_text(safe(line, style="bold" if gi == 0 else ""))
    for w in workers:
        if not w.get("tested"):
            out.append("\n")
            out.append_text(safe(f"{w['url']} ({w.get('worker_type')}): not checked", "dim"))
    return out


class FleetScreen(BoxModal[str | None]):
    """Every replica of a fleet run against the reference; dismissed with the chosen replica's
    URL (Enter) or None."""

    BINDINGS = [Binding("escape,q,c", "close", "Close", id="fleet.close")]

    BOX = Vertical  # the table scrolls itself
    BOX_TITLE = "fleet · every replica against the reference, bit for bit"
    BOX_SUBTITLE = "enter opens a replica's dashboard · esc closes"

    def __init__(self, fleet: Fleet, vars_: dict) -> None:
        super().__init__()
        self.fleet = fleet
        self.vars_ = dict(vars_)

    def body(self) -> ComposeResult:
        """The summary above a replicas x helpers table."""
        yield Static(fleet_head(self.fleet, self.vars_), id="fleet-head")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="fleet-table")

    def on_mount(self) -> None:
        """Fill the table: one row per replica, one column per helper."""
        table = self.query_one(DataTable)
        helpers = list(self.fleet.matrices)
        table.add_columns("replica", "group", *helpers)
        group = self.fleet.group_of()
        for url, row in replica_cells(self.fleet).items():
            cells = [
                Text(GLYPH.get(v, v), style=self.vars_.get(VERDICT_COLOUR.get(v, ""), "dim"))
                for v in (row[h] for h in helpers)
            ]
            g = str(group[url] + 1) if url in group else "–"
            table.add_row(safe(url), g, *cells, key=url)
        table.focus()

    def on_data_table_row_selected(self, msg: DataTable.RowSelected) -> None:
        """Enter on a replica: back to the dashboard, on that replica."""
        msg.stop()
        self.dismiss(msg.row_key.value)

    def action_close(self) -> None:
        """Back to the dashboard as it was."""
        self.dismiss(None)
