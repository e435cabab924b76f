"""Runs of this session (re-runs with `r`, or on server restart with --watch), newest last,
with whether each run's per-token values are bit-identical to the run before."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from kltui import fmt
from kltui.session.helper_view import HelperView
from kltui.tui.widgets.parts import part


@dataclass
class RunRecord:
    """One past run of a --watch or re-run session, as the history shows it."""

    run_no: int
    started_at: float | None
    verdict: str
    helpers: dict[str, dict] = field(default_factory=dict)  # key -> summary subset
    identical: bool | None = None  # vs the previous run; None: not comparable / first run
    recording: str | None = None
    difference: str | None = None  # where it first differs from the previous run, in words


def record_of(
    run_no: int,
    store,
    identical: bool | None,
    recording: str | None,
    difference: str | None = None,
) -> RunRecord:
    """The history record of a finished run."""
    helpers = {}
    for key, st in store.helpers.items():
        v = HelperView.of(st)
        helpers[key] = {
            "helper": st.helper,
            "avg_kl_div": v.summary.avg_kl_div,
            "tail_fraction": v.summary.tail_fraction,
            "status": v.status,
        }
    verdict = store.finished.verdict if store.finished else "interrupted"
    started = store.run.started_at if store.run else None
    return RunRecord(run_no, started, verdict, helpers, identical, recording, difference)


# a run's verdict as a component class, coloured in app.tcss; any other verdict warns
VERDICT_CLASS = {"pass": "history--ok", "fail": "history--bad", "error": "history--bad"}


class HistoryPanel(Static):
    """The panel listing the runs of this session."""

    DEFAULT_CLASSES = "panel"  # its look: `.panel` in app.tcss
    COMPONENT_CLASSES = {"history--ok", "history--warn", "history--bad"}

    def show(self, runs: list[RunRecord], selected: str | None, watching: bool):
        """Show the runs so far, for the selected helper."""
        self.border_title = "history · watching" if watching else "history"
        grid = Table.grid(padding=(0, 1))
        for _ in range(6):
            grid.add_column(no_wrap=True)
        if not runs:
            grid.add_row(Text("r re-runs · --watch: on server restart", style="dim"))
            self.update(grid)
            return
        for rec in runs[-8:]:
            h = rec.helpers.get(selected or "", {})
            when = (
                time.strftime("%H:%M:%S", time.localtime(rec.started_at)) if rec.started_at else ""
            )
            ident = {
                True: Text("≡ identical", style=part(self, "history--ok")),
                False: Text("≠ changed", style=part(self, "history--warn")),
                None: Text("", style="dim"),
            }[rec.identical]
            grid.add_row(
                Text(f"#{rec.run_no}", style="bold"),
                Text(when, style="dim"),
                Text(
                    rec.verdict, style=part(self, VERDICT_CLASS.get(rec.verdict, "history--warn"))
                ),
                Text(fmt.sci(h.get("avg_kl_div"), 2)),
                Text(fmt.pct(h.get("tail_fraction"))),
                ident,
            )
        self.update(grid)
