"""One sample, token by token: where the two paths start to disagree, and by how much."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from kltui import fmt
from kltui.metrics import scale
from kltui.metrics.cross import FLIP_MARGIN_LINE, flips, pairs_table
from kltui.metrics.k3 import ScoredSample, log_ratio
from kltui.session.servers import NO_TOKENIZER
from kltui.session.store import HelperState
from kltui.tui import heat
from kltui.tui.screens.noise_band import band, band_cell, band_note
from kltui.tui.widgets.footer import KltuiFooter
from kltui.tui.widgets.header import TitleBar
from kltui.tui.widgets.kstrip import K3Strip
from kltui.tui.widgets.parts import part
from kltui.untrusted import escape_controls, safe, token_repr
from kltui.words.screen_drill import extras_note as extras_note_parts
from kltui.words.screen_drill import id_mismatch_line, row_in_full

TOPK_MIN_WIDTH = 14  # a top-k column narrower than one entry ("␣which -0.834") says nothing
MORE = "  +{}"  # entries a top-k cell has no room for: the line under the table lists them


def topk_entries(entries, token_text) -> list[Text]:
    """Each top-k alternative as "text logprob" (the id where no text is known)."""
    out: list[Text] = []
    for item in entries or ():
        try:
            tid, lp = int(item[0]), float(item[1])
        except (TypeError, ValueError, IndexError):
            continue
        t = Text(no_wrap=True)
        if token_text and tid in token_text:
            t.append_text(token_repr(token_text[tid]))
        else:
            t.append(str(tid), style="bold")
        t.append(f" {lp:.3f}", style="dim")
        out.append(t)
    return out


def topk_cell(entries: list[Text], width: int | None) -> Text:
    """As many whole entries as fit `width` (None: all), then "+N" for the N left out."""
    t = Text(no_wrap=True)
    for i, entry in enumerate(entries):
        rest = len(entries) - i - 1
        need = (
            t.cell_len + (2 if i else 0) + entry.cell_len + (len(MORE.format(rest)) if rest else 0)
        )
        if width is not None and need > width:
            t.append(MORE.format(len(entries) - i), style="dim")
            break
        if i:
            t.append("  ")
        t.append_text(entry)
    return t


def _span(entries: list[Text]) -> int:
    """The width of a top-k cell showing every entry."""
    return sum(e.cell_len for e in entries) + 2 * max(0, len(entries) - 1)


def extras_figures(extras: list, lp_a: np.ndarray) -> tuple[list[tuple[int, int]], int, int]:
    """The separate requests' positions (first, last of each), and at how many of their
    positions (same, total) the logprob equals the gate's lp A bit for bit."""
    spans = [(ev.start, ev.start + len(ev.token_ids) - 1) for ev in extras]
    same = total = 0
    for ev in extras:
        gate = lp_a[ev.start : ev.start + len(ev.lp)]
        n = min(gate.size, len(ev.lp))
        same += int(
            np.sum(
                np.asarray(ev.lp[:n], dtype=np.float64).view(np.int64) == gate[:n].view(np.int64)
            )
        )
        total += n
    return spans, same, total


def extras_note(extras: list, lp_a: np.ndarray) -> Text:
    """Where the top-k and text come from, and whether that request agreed with the gate."""
    label, source, figures = extras_note_parts(*extras_figures(extras, lp_a))
    return Text.assemble((label, "dim"), (source, "bold"), (figures, "dim"))


class DrillDown(Screen):
    """One sample token by token: both logprobs, k3, and the top-k alternatives."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="drill.back"),
        Binding("f", "first_divergence", "First divergence", id="drill.first"),
        Binding("n", "tail(1)", "Next tail", id="drill.next-tail"),
        Binding("p,N", "tail(-1)", "Prev tail", id="drill.prev-tail"),
        # `m` is the monitor's key on the dashboard: one meaning per key
        Binding("w", "max_k3", "Worst token (max k3)", id="drill.max"),
        Binding("x", "fetch_extras", "Fetch top-k", show=False, id="drill.fetch"),
    ]
    COMPONENT_CLASSES = {"drill--bad"}  # coloured in app.tcss

    def __init__(
        self,
        state: HelperState,
        sample: int,
        position: int | None = None,
        token_text: dict[int, str] | None = None,
        palette: heat.Palette | None = None,
    ) -> None:
        super().__init__()
        self.state = state
        self.sample = sample
        self.scored: ScoredSample = state.book.samples[sample]
        self.start_position = position
        self.token_text = token_text
        self.palette = palette
        self.tau = state.tail_threshold
        # position -> top-k from the extras request (a separate request, after the gate)
        self.extras = list(state.extras.get(sample, []))
        self.extra_top: dict[int, list] = {}
        for ev in self.extras:
            for j, top in enumerate(ev.top):
                self.extra_top[ev.start + j] = top
        k3 = self.scored.k3
        self.tail_positions = np.flatnonzero(~(k3 <= self.tau))  # NaN counts as tail
        self.band = band(state, sample, self.scored)  # cross_engine's own-noise band
        self.message = ""
        self.fetch_note = ""  # fetching top-k and text for this sample: where that stands

    def compose(self) -> ComposeResult:
        """The title bar, the sample's heading, its k3 strip and its token table."""
        yield TitleBar()
        with Vertical():
            yield Static(id="drill-head")
            with Vertical(id="drill-spark-box"):
                sc = self.scored
                yield K3Strip(sc.k3, sc.lp_a, sc.lp_b, self.palette, id="drill-spark")
            yield DataTable(id="drill-table", cursor_type="row", zebra_stripes=True)
            # the row under the cursor in full: its text and every top-k entry the columns cut
            yield Static(id="drill-detail")
        yield KltuiFooter()

    @property
    def table(self) -> DataTable:
        """The token table."""
        return self.query_one("#drill-table", DataTable)

    def _no_server_tokenizer(self) -> bool:
        """The server of this sample was started with --skip-tokenizer-init (ids only)."""
        store = getattr(self.app, "store", None)
        return store is not None and store.identity(self.state.server).skip_tokenizer_init

    def on_mount(self) -> None:
        """Fill in the heading, strip and table, and go to the asked position."""
        app = self.app
        # The same title bar as the dashboard: a replay stays marked as one on every screen.
        self.query_one(TitleBar).show(getattr(app, "store", None), getattr(app, "status", None))
        head = self.query_one("#drill-head", Static)
        head.border_title = safe(f"sample {self.sample} · {self.state.helper}")
        head.border_subtitle = "f first divergence · n/p next/prev tail · m max · esc back"
        fetch = getattr(app, "fetch_opened_extras", None)
        if fetch is not None and self.needs_extras:
            fetch(self, asked=False)  # sets the note the header shows
        self._show_head()
        box = self.query_one("#drill-spark-box")
        box.border_title = "log10 k3 along the sequence"
        box.border_subtitle = "the heatmap's scale and colours · · bit-identical · max per column"
        self._fill_table()
        table = self.table
        table.focus()
        if self.start_position is not None:
            self.goto(self.start_position)
        elif self.scored.metrics.first_divergence is not None:
            self.goto(self.scored.metrics.first_divergence)

    def action_fetch_extras(self) -> None:
        """x: fetch this sample's top-k and text now (a replay asks its recorded server)."""
        fetch = getattr(self.app, "fetch_opened_extras", None)
        if fetch is None or not self.needs_extras:
            self._say("this sample's top-k and text are already shown")
            return
        fetch(self, asked=True)

    @property
    def needs_extras(self) -> bool:
        """Neither the gate nor a request after it gave this sample top-k and text."""
        return not (self.extras or self.scored.top_a or self.scored.top_b)

    def note(self, text: str) -> None:
        """A line under the header about fetching this sample's top-k and text."""
        self.fetch_note = text
        if self.query("#drill-head"):
            self._show_head()

    def reload(self) -> None:
        """Show the top-k and text that arrived for this sample after it was opened."""
        self.extras = list(self.state.extras.get(self.sample, []))
        self.extra_top = {ev.start + j: top for ev in self.extras for j, top in enumerate(ev.top)}
        self.token_text = getattr(self.app, "token_text", None) or self.token_text
        row = self.table.cursor_row
        self.table.clear(columns=True)
        self._fill_table()
        self.goto(row)
        self._show_head()

    def flip_margins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(flip, margin A, margin B) per position from the recorded top-k, None without it."""
        sc = self.scored
        if not (sc.top_a and sc.top_b):
            return None
        n = sc.token_ids.size
        ia, la = pairs_table(sc.top_a, n)
        ib, lb = pairs_table(sc.top_b, n)
        return flips(ia, la, ib, lb)

    def _flip_note(self, t: Text) -> None:
        fm = self.flip_margins()
        if fm is None or not fm[0].any():
            return
        flip, ma, mb = fm
        both = np.fmax(ma, mb)[flip]
        wide = int((both >= FLIP_MARGIN_LINE).sum())
        t.append(f"\ntop-1 flips {int(flip.sum())}", style="bold")
        t.append(f" · inside {FLIP_MARGIN_LINE:g} nats {int((both < FLIP_MARGIN_LINE).sum())}")
        t.append(" (near a tie: expected)", style="dim")
        t.append(f" · across {wide}", style=part(self, "drill--bad") if wide else "")
        if wide:
            t.append(" (either side was sure: not rounding)", style="dim")

    def _show_head(self) -> None:
        sc, m = self.scored, self.scored.metrics
        t = Text()
        t.append_text(safe(self.state.server, style="bold"))
        t.append(f"  · {m.n_tokens} generated tokens · prompt {sc.prompt_len} tokens")
        t.append(f" · cached {sc.cached_tokens}\n")
        t.append("mean k3 ", style="dim")
        t.append(fmt.sci(m.mean_k3), style="bold")
        t.append("  max k3 ", style="dim")
        t.append(fmt.sci(m.max_k3), style="bold")
        t.append(f" @ {m.argmax_k3}", style="dim")
        t.append("  first divergence ", style="dim")
        t.append("none" if m.first_divergence is None else str(m.first_divergence), style="bold")
        t.append(f"  tokens differing {m.n_nonzero}", style="dim")
        t.append(f"  tail (k3 > {fmt.sci(self.tau, 0)}) ", style="dim")
        t.append(f"{m.n_tail}", style="bold")
        if self.extras:
            t.append("\n")
            t.append_text(extras_note(self.extras, sc.lp_a))
        elif not (sc.top_a or sc.top_b):
            t.append("  top-k not recorded", style="dim")
        self._flip_note(t)
        if self.band is not None:
            t.append("\n")
            t.append_text(band_note(self.band, sc))
        if self.fetch_note:
            t.append("\n")
            t.append(escape_controls(self.fetch_note), style="italic")
        if self._no_server_tokenizer():
            t.append("\n")
            t.append(NO_TOKENIZER, style="bold")
            t.append(
                ": token text from the local --tokenizer"
                if any(ev.texts for ev in self.extras)
                else ": token ids only (--tokenizer PATH gives token text)",
                style="dim",
            )
        if m.non_finite:
            t.append(f"  non-finite {m.non_finite}", style=part(self, "drill--bad"))
        if sc.id_mismatch:
            t.append(f"\n{heat.MARK_ID} {id_mismatch_line(len(sc.id_mismatch))}", style="bold")
        self.query_one("#drill-head", Static).update(t)

    def _fill_table(self) -> None:
        sc = self.scored
        table = self.table
        tt = self.token_text
        has_top = bool(sc.top_a or sc.top_b)
        extra = self.extra_top
        # k3 and the logprobs first: an 80-column terminal shows them; the top-k columns share
        # whatever room is left, and the line under the table lists the cursor row in full
        columns = [
            ("pos", "pos"),
            ("k3", "k3"),
            ("lp_a", "lp A (prefill)"),
            ("lp_b", "lp B (decode)"),
            ("r", "r = A−B"),
            ("id", "token id"),
            ("abs", "abs pos"),
            *([("text", "text")] if tt else []),
            *([("band", "own noise A / B")] if self.band is not None else []),
        ]
        tops = [("top_a", "top-k A"), ("top_b", "top-k B")] if has_top else []
        if extra and not has_top:
            tops = [("top_x", "top-k (separate request)")]
        fm = self.flip_margins()
        flip = fm[0] if fm is not None and fm[0].any() else None
        r = log_ratio(sc.lp_a, sc.lp_b)
        first = sc.metrics.first_divergence
        ids = sc.token_ids.tolist()
        lp_a, lp_b, k3 = sc.lp_a.tolist(), sc.lp_b.tolist(), sc.k3.tolist()
        levels = scale.token_levels(sc.k3, sc.lp_a, sc.lp_b).tolist()
        pal = self.palette
        reported = dict(sc.id_mismatch or ())
        rows, top_cells = [], []
        for i, tid in enumerate(ids):
            mark = heat.MARK_FIRST if i == first else " "
            k = k3[i]
            kt = Text(no_wrap=True)
            kt.append("■ ", style=pal.fg[levels[i]] if pal else "")
            kt.append(fmt.sci(k), style="bold" if not (k <= self.tau) else "")
            row = [
                Text(f"{mark}{i}", style="bold" if i == first else ""),
                kt,
                f"{lp_a[i]:.6f}",
                f"{lp_b[i]:.6f}",
                "0" if r[i] == 0 else f"{r[i]:+.3e}",
                str(tid)
                if i not in reported
                else Text(f"{tid} {heat.MARK_ID} {reported[i]}", style="bold"),
                str(sc.prompt_len + i),
            ]
            if tt:
                row.append(token_repr(tt.get(tid)))
            if self.band is not None:
                row.append(band_cell(self.band[i]))
            rows.append(row)
            top_cells.append([topk_entries(self._top_of(key, i), tt) for key, _ in tops])
        flip_cells = (
            [self._flip_cell(bool(flip[i]), fm[1][i], fm[2][i]) for i in range(len(ids))]
            if flip is not None and fm is not None
            else []
        )
        width = self._top_width(columns, rows, tops, top_cells, flip_cells)
        self.top_cut = False
        for key, label in columns:
            table.add_column(label, key=key)
        for key, label in tops:
            table.add_column(label, key=key, width=width)
        if flip_cells:
            table.add_column("flip margin A / B", key="flip")
        for i, row in enumerate(rows):
            for entries in top_cells[i]:
                row.append(topk_cell(entries, width))
                self.top_cut = self.top_cut or (width is not None and _span(entries) > width)
            if flip_cells:
                row.append(flip_cells[i])
        table.add_rows(rows)
        self._laid_out_at = self.app.size.width

    def _top_of(self, key: str, i: int):
        sc = self.scored
        if key == "top_a":
            return sc.top_a[i] if sc.top_a and i < len(sc.top_a) else None
        if key == "top_b":
            return sc.top_b[i] if sc.top_b and i < len(sc.top_b) else None
        return self.extra_top.get(i)

    def _top_width(self, columns, rows, tops, top_cells, flip_cells) -> int | None:
        """Each top-k column's width: the room the other columns leave, shared; None where
        every entry fits (or there is no top-k)."""
        if not tops:
            return None

        def width(values, label: str) -> int:
            cells = [v.cell_len if isinstance(v, Text) else len(v) for v in values]
            return max([len(label), *cells]) + 2  # DataTable's cell padding

        fixed = sum(width([row[j] for row in rows], label) for j, (_, label) in enumerate(columns))
        if flip_cells:
            fixed += width(flip_cells, "flip margin A / B")
        room = (self.app.size.width - 1 - fixed) // len(tops) - 2  # a 1-column scrollbar
        need = max((_span(entries) for cells in top_cells for entries in cells), default=0)
        if need <= room:
            return None if need <= 0 else need
        return max(TOPK_MIN_WIDTH, room)

    def _flip_cell(self, flipped: bool, ma: float, mb: float) -> Text:
        if not flipped:
            return Text("")
        wide = bool(np.fmax(ma, mb) >= FLIP_MARGIN_LINE)

        def nats(x: float) -> str:
            return "?" if np.isnan(x) else f"{x:.3g}"

        return Text(
            f"{nats(ma)} / {nats(mb)}",
            style=part(self, "drill--bad") if wide else "",
            no_wrap=True,
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The line under the table follows the cursor."""
        self._show_detail(event.cursor_row)

    def on_resize(self) -> None:
        """The top-k columns share the room there is: laid out again for a new width."""
        if self.query("#drill-table") and getattr(self, "_laid_out_at", None) not in (
            None,
            self.app.size.width,
        ):
            self.reload()

    def _show_detail(self, i: int) -> None:
        """The row under the cursor in full: its token's text and every top-k entry (the
        columns show what fits, "+N" for the rest)."""
        box = self.query_one("#drill-detail", Static)
        sc, tt = self.scored, self.token_text
        keys = (
            [("top_a", "top-k A"), ("top_b", "top-k B")]
            if sc.top_a or sc.top_b
            else [("top_x", "top-k")]
            if self.extra_top
            else []
        )
        box.display = bool(keys or tt)
        if not box.display or not 0 <= i < sc.token_ids.size:
            return
        tid = int(sc.token_ids[i])
        pos, in_full, token = row_in_full(i, tid, cut=self.top_cut)
        t = Text()
        t.append(pos, style="bold")
        if in_full:
            t.append(in_full, style="dim")
        t.append(token)
        if tt:
            t.append(" ")
            t.append_text(token_repr(tt.get(tid)))
        for key, label in keys:
            entries = topk_entries(self._top_of(key, i), tt)
            t.append(f" · {label} ", style="dim")
            if not entries:
                t.append("–", style="dim")
            for j, entry in enumerate(entries):
                if j:
                    t.append("  ")
                t.append_text(entry)
        box.update(t)

    @property
    def position(self) -> int:
        """The position under the cursor."""
        return self.table.cursor_row

    def goto(self, pos: int) -> None:
        """Move the cursor to a position."""
        pos = max(0, min(int(pos), self.table.row_count - 1))
        self.table.move_cursor(row=pos, animate=False)

    def _say(self, text: str) -> None:
        self.message = text
        self.notify(text, timeout=2)

    def action_first_divergence(self) -> None:
        """Go to the sample's first divergence."""
        fd = self.scored.metrics.first_divergence
        if fd is None:
            self._say("no divergence: every logprob pair is bit-identical")
        else:
            self.goto(fd)

    def action_max_k3(self) -> None:
        """Go to the sample's largest k3."""
        if self.scored.metrics.argmax_k3 >= 0:
            self.goto(self.scored.metrics.argmax_k3)

    def action_tail(self, direction: int) -> None:
        """Go to the next (or previous) tail token."""
        tails = self.tail_positions
        if tails.size == 0:
            self._say(f"no tail tokens (k3 > {fmt.sci(self.tau, 0)}) in this sample")
            return
        cur = self.position
        if direction > 0:
            i = int(np.searchsorted(tails, cur, side="right"))
            if i >= tails.size:
                self._say("no further tail token")
                return
        else:
            i = int(np.searchsorted(tails, cur, side="left")) - 1
            if i < 0:
                self._say("no earlier tail token")
                return
        self.goto(int(tails[i]))
