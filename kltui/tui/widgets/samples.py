"""Per-sample table of the selected helper, sortable by the columns that point at a culprit."""

from __future__ import annotations

import math

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from kltui import fmt
from kltui.metrics import scale
from kltui.session.store import HelperState
from kltui.tui import heat

# (key, label, width). Fixed widths: measuring a live column on every update costs the whole
# column each time (quadratic over a run), and fixed columns do not jump while data arrives.
# Each width has its one column of space between cells (the table has no cell padding): all
# of them fit the 70 columns the table has beside the counters at 120x40 and within 80x24, and
# the columns that point at a culprit come first, so a narrower table (100-119 columns, beside
# the counters) cuts the sample's lengths, never them.
# A sample being decoded or skipped says so in its mean k3 cell (it has no k3 yet).
COLUMNS = (
    ("sample", "sample", 7),
    ("mean", "mean k3", 11),
    ("max", "max k3", 11),
    ("argmax", "@pos", 6),
    ("first", "1st div", 8),
    ("tail", "tail", 6),
    ("length", "tokens", 7),
    ("prompt", "prompt", 7),
    ("cached", "cached", 6),
)
# sort id -> (label, descending); the cycle order of the sort key
SORTS = {
    "sample": ("sample", False),
    "mean": ("mean k3 ↓", True),
    "max": ("max k3 ↓", True),
    "first": ("first divergence ↑", False),
    "cached": ("cached tokens ↓", True),
    "length": ("length ↓", True),
}
SORT_CYCLE = tuple(SORTS)


def _desc_value(v: float | None) -> float:
    """Sort value for 'largest first' columns: NaN (a fault) first, missing last."""
    if v is None:
        return -math.inf
    if math.isnan(v):
        return math.inf
    return v


class SampleTable(DataTable):
    """One row per sample of the selected helper, sortable."""

    BINDINGS = [
        Binding("o", "cycle_sort", "Sort", id="samples.sort"),
    ]

    def __init__(self, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, cell_padding=0, **kw)
        self.state: HelperState | None = None
        self.run_gen = -1
        self.sort_by = "sample"
        self._sigs: dict[int, tuple] = {}
        self._values: dict[int, dict] = {}
        self._palette: heat.Palette | None = None

    def on_mount(self) -> None:
        """Add the columns."""
        self._add_columns()

    def _add_columns(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def show(self, state: HelperState | None, run_gen: int, palette: heat.Palette) -> None:
        """Show a helper's samples, updating only the rows that changed."""
        if state is not self.state or run_gen != self.run_gen or palette is not self._palette:
            self.clear()
            self._sigs.clear()
            self._values.clear()
            self.state, self.run_gen, self._palette = state, run_gen, palette
        if state is None:
            self._set_title()
            return
        samples = sorted(set(state.book.samples) | set(state.decoded_len) | set(state.skipped))
        changed = False
        for s in samples:
            sig = self._signature(state, s)
            if self._sigs.get(s) == sig:
                continue
            cells = self._cells(state, s)
            if s in self._sigs:
                for (col, _, _), value in zip(COLUMNS, cells, strict=True):
                    self.update_cell(str(s), col, value)
            else:
                self.add_row(*cells, key=str(s))
            self._sigs[s] = sig
            changed = True
        if changed:
            self._apply_sort()
        self._set_title()

    def _set_title(self) -> None:
        n = len(self._sigs)
        label = SORTS[self.sort_by][0]
        self.border_title = f"samples ({n})"
        self.border_subtitle = f"sorted by {label} · o cycles · click a header"

    @staticmethod
    def _signature(st: HelperState, s: int) -> tuple:
        scored = st.book.samples.get(s)
        if scored is not None:
            return ("s", id(scored))
        if s in st.skipped:
            return ("k", st.skipped[s])
        return ("d", st.decoded_len.get(s, 0))

    def _swatch_value(self, v: float | None) -> Text:
        t = Text(no_wrap=True)
        if v is None:
            t.append("–", style="dim")
            return t
        level = scale.level_of(v)
        t.append("■ ", style=self._palette.fg[level] if self._palette else "")
        t.append(fmt.sci(v, 2))
        return t

    def _cells(self, st: HelperState, s: int) -> list:
        scored = st.book.samples.get(s)
        values: dict = {"sample": s}
        if scored is None:
            if s in st.skipped:  # the reason is on the heatmap's cursor line
                status = Text("skipped", style="italic")
            else:
                status = Text("decoding", style="dim")
            n = st.decoded_len.get(s, 0)
            values.update(length=n)
            self._values[s] = values
            return [Text(str(s)), status, "", "", "", "", Text(str(n), style="dim"), "", ""]
        m = scored.metrics
        values.update(
            mean=m.mean_k3,
            max=m.max_k3,
            first=m.first_divergence,
            cached=scored.cached_tokens,
            length=m.n_tokens,
        )
        self._values[s] = values
        first = "–" if m.first_divergence is None else str(m.first_divergence)
        tail = f"{m.n_tail}" if m.n_tail else "0"
        return [
            Text(str(s), style="bold"),
            self._swatch_value(m.mean_k3),
            self._swatch_value(m.max_k3),
            Text(str(m.argmax_k3) if m.argmax_k3 >= 0 else "–"),
            Text(first),
            Text(tail, style="bold" if m.n_tail else "dim"),
            Text(str(m.n_tokens)),
            Text(str(scored.prompt_len)),
            Text(str(scored.cached_tokens)),
        ]

    def _sort_key(self, cell: Text):
        v = self._values.get(int(cell.plain), {})
        s = v.get("sample", 0)
        by = self.sort_by
        if by == "sample":
            return (s,)
        if by == "first":
            f = v.get("first")
            return (f is None, f if f is not None else 0, s)
        return (-_desc_value(v.get(by)), s)

    def _apply_sort(self) -> None:
        key = (
            self.coordinate_to_cell_key(self.cursor_coordinate).row_key if self.row_count else None
        )
        self.sort("sample", key=self._sort_key)
        if key is not None and key.value is not None:
            try:
                self.move_cursor(row=self.get_row_index(key), animate=False, scroll=False)
            except Exception:  # noqa: BLE001 - the row may be gone after a helper switch
                pass

    def set_sort(self, by: str) -> None:
        """Sort the rows by a column."""
        if by in SORTS:
            self.sort_by = by
            self._apply_sort()
            self._set_title()

    def action_cycle_sort(self) -> None:
        """Sort by the next column."""
        i = SORT_CYCLE.index(self.sort_by)
        self.set_sort(SORT_CYCLE[(i + 1) % len(SORT_CYCLE)])

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """Sort by the clicked column."""
        mapping = {
            "sample": "sample",
            "mean": "mean",
            "max": "max",
            "first": "first",
            "cached": "cached",
            "length": "length",
        }
        by = mapping.get(str(event.column_key.value))
        if by:
            self.set_sort(by)
        event.stop()

    def selected_sample(self) -> int | None:
        """The sample under the cursor, or None."""
        if not self.row_count:
            return None
        row_key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return int(row_key.value) if row_key.value is not None else None
