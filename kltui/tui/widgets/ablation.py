"""The matrix of a sweep's configurations (`outputs/ablation_matrix.MatrixRow`s): one row per
configuration, updated in place as the sweep goes, so the cursor stays where the user put it.

Laid out for its width, as the dashboard's sample table is (`widgets/samples.py`): fixed
columns for the figures, the configuration's name, its verdict and its state sharing what is
left, every cell cut to its column with an ellipsis (the row in full is the line under the
matrix). Narrow, the columns that matter least go first: the tail fraction below
`FULL_WIDTH` columns of table, the bit-equality below `MID_WIDTH`; the state column always
stays on screen."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.widgets import DataTable

from kltui.ablate.sweep import FAILED
from kltui.outputs.ablation_matrix import DONE, RUNNING, STARTING, MatrixRow, Tone
from kltui.untrusted import safe

# (key, label) of every column, in order
COLUMNS = (
    ("name", "configuration"),
    ("avg", "avg_kl_div"),
    ("tail", "tail"),
    ("bit_equal", "bit-equal"),
    ("condition", "condition"),
    ("verdict", "verdict"),
    ("state", "state"),
)
# fixed widths, each with its one column of space between cells (the table has no padding)
FIXED = {"avg": 11, "tail": 7, "bit_equal": 10, "condition": 13}
# the shared columns' least widths, and the verdict's share of what the name leaves
MIN_FLEX = {"name": 12, "verdict": 12, "state": 12}
NAME_SHARE = 0.4  # the name takes at most this share of the flexible width
VERDICT_SHARE = 0.55
# table widths (columns) from which the tail fraction, then the bit-equality, are shown
FULL_WIDTH = 110
MID_WIDTH = 90
# a row's state -> theme variable of its colour (app.tcss's scale colours)
STATE_COLOUR = {DONE: "kl-ok", FAILED: "kl-bad", STARTING: "kl-warn", RUNNING: "kl-warn"}
# a verdict's tone -> theme variable of its colour
VERDICT_COLOUR = {Tone.GOOD: "kl-ok", Tone.BAD: "kl-bad", Tone.WARN: "kl-warn"}


def layout(
    width: int, names: Sequence[str] = (), verdicts: Sequence[str] = ()
) -> list[tuple[str, str, int]]:
    """(key, label, width) of each column shown in a table `width` columns wide: the fixed
    columns that fit, then the name and the verdict as long as their longest (each within its
    share of what is left), the state the rest (its line changes while the sweep runs: it
    never moves the other columns)."""
    keys = [k for k, _ in COLUMNS]
    if width < FULL_WIDTH:
        keys.remove("tail")
    if width < MID_WIDTH:
        keys.remove("bit_equal")
    fixed = sum(FIXED[k] for k in keys if k in FIXED)
    flex = max(width - fixed, sum(MIN_FLEX.values()))
    labels = dict(COLUMNS)
    longest = max((len(n) for n in (*names, labels["name"])), default=0) + 1
    name = max(MIN_FLEX["name"], min(longest, int(flex * NAME_SHARE)))
    rest = flex - name
    said = max((len(v) for v in (*verdicts, labels["verdict"])), default=0) + 1
    verdict = max(MIN_FLEX["verdict"], min(said, int(rest * VERDICT_SHARE)))
    state = max(MIN_FLEX["state"], rest - verdict)
    widths = FIXED | {"name": name, "verdict": verdict, "state": state}
    return [(k, labels[k], widths[k]) for k in keys]


def fit(text: Text, width: int) -> Text:
    """`text` cut to a column of `width` (one column of it the space between cells), with an
    ellipsis where it was cut."""
    out = text.copy()
    out.no_wrap = True
    out.truncate(max(1, width - 1), overflow="ellipsis")
    return out


class SweepMatrix(DataTable):
    """Configurations as rows; `show` puts the newest rows in, adding the ones --pairs adds,
    and lays them out again when the width changes."""

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, cell_padding=0, **kw)
        self._names: list[str] = []
        self._rows: list[MatrixRow] = []
        self._vars: dict = {}
        self._columns: list[tuple[str, str, int]] = []

    def _width(self) -> int:
        # the scrollbar's column(s) are kept free, so a long sweep does not cut the state
        return max(0, self.size.width - self.styles.scrollbar_size_vertical)

    def _relayout(self) -> None:
        """The columns for the current width (and names), and every row again."""
        cols = layout(self._width(), [r.name for r in self._rows], [r.verdict for r in self._rows])
        if cols == self._columns:
            return
        row = self.cursor_row
        self.clear(columns=True)
        self._columns = cols
        self._names = []
        for key, label, width in cols:
            self.add_column(fit(Text(label), width), key=key, width=width)
        self._put(self._rows)
        if 0 <= row < len(self._names):
            self.move_cursor(row=row, animate=False)

    def on_resize(self, event: events.Resize) -> None:
        """Laid out again for the new width."""
        self._relayout()

    def show(self, rows: list[MatrixRow], vars_: dict) -> None:
        """Each row's cells, escaped (log and failure lines are server text), coloured by
        its state and verdict, cut to their columns."""
        self._rows, self._vars = list(rows), vars_
        self._relayout()  # a new name (--pairs) or verdict may widen its column
        self._put(rows)

    def _put(self, rows: list[MatrixRow]) -> None:
        if not self._columns:
            return
        for row in rows:
            cells = self._cells(row, self._vars)
            shown = [fit(cells[key], width) for key, _, width in self._columns]
            if row.name not in self._names:
                self.add_row(*shown, key=row.name)
                self._names.append(row.name)
                continue
            for (key, _, _), cell in zip(self._columns, shown, strict=True):
                self.update_cell(row.name, key, cell)

    @staticmethod
    def _cells(row: MatrixRow, vars_: dict) -> dict[str, Text]:
        state = vars_.get(STATE_COLOUR.get(row.state_kind, ""), "dim")
        verdict = vars_.get(VERDICT_COLOUR.get(row.verdict_tone, ""), "")
        return {
            "name": safe(row.name, "bold" if row.name == "base" else ""),
            "avg": safe(row.avg),
            "tail": safe(row.tail),
            "bit_equal": safe(row.bit_equal),
            "condition": safe(row.condition),
            "verdict": safe(row.verdict, verdict),
            "state": safe(row.state, state),
        }

    def row(self, name: str) -> MatrixRow | None:
        """A configuration's row in full (its cells show it cut to their columns)."""
        return next((r for r in self._rows if r.name == name), None)

    @property
    def names(self) -> list[str]:
        """The configurations shown, in order."""
        return list(self._names)

    @property
    def shown_columns(self) -> list[str]:
        """The keys of the columns shown at this width."""
        return [k for k, _, _ in self._columns]
