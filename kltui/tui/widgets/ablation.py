"""The matrix of a sweep's configurations (`outputs/ablation_matrix.MatrixRow`s): one row per
configuration, updated in place as the sweep goes, so the cursor stays where the user put it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from kltui.outputs.ablation_matrix import DONE, RUNNING, STARTING, MatrixRow
from kltui.run.sweep_manifest import FAILED
from kltui.untrusted import safe

COLUMNS = (
    ("configuration", "name"),
    ("avg_kl_div", "avg"),
    ("tail", "tail"),
    ("bit-equal vs base", "bit_equal"),
    ("condition", "condition"),
    ("verdict", "verdict"),
    ("state", "state"),
)
# a row's state -> theme variable of its colour (app.tcss's scale colours)
STATE_COLOUR = {DONE: "kl-ok", FAILED: "kl-bad", STARTING: "kl-warn", RUNNING: "kl-warn"}
# a verdict's first word -> theme variable of its colour
VERDICT_COLOUR = {
    "removed": "kl-ok",
    "reduced": "kl-ok",
    "worse": "kl-bad",
    "failed": "kl-bad",
    "the": "kl-warn",  # the flag did not take effect
    "not": "kl-warn",  # not tested: ...
    "inconclusive": "kl-warn",
}


class SweepMatrix(DataTable):
    """Configurations as rows; `show` puts the newest rows in, adding the ones --pairs adds."""

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self._names: list[str] = []

    def on_mount(self) -> None:
        """The columns."""
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    def show(self, rows: list[MatrixRow], vars_: dict) -> None:
        """Each row's cells, escaped (log and failure lines are server text), coloured by
        its state and verdict."""
        for row in rows:
            cells = self._cells(row, vars_)
            if row.name not in self._names:
                self.add_row(*cells, key=row.name)
                self._names.append(row.name)
                continue
            for (_, key), cell in zip(COLUMNS, cells, strict=True):
                self.update_cell(row.name, key, cell)

    @staticmethod
    def _cells(row: MatrixRow, vars_: dict) -> list[Text]:
        state = vars_.get(STATE_COLOUR.get(row.state_kind, ""), "dim")
        first = row.verdict.split(" ", 1)[0].rstrip(":")
        verdict = vars_.get(VERDICT_COLOUR.get(first, ""), "")
        return [
            safe(row.name, "bold" if row.name == "base" else ""),
            safe(row.avg),
            safe(row.tail),
            safe(row.bit_equal),
            safe(row.condition),
            safe(row.verdict, verdict),
            # the last column, so that a failure's whole line (which ends with the log's last
            # lines, the why) fits without pushing the figures away
            safe(row.state, state),
        ]

    @property
    def names(self) -> list[str]:
        """The configurations shown, in order."""
        return list(self._names)
