"""One line per helper: phase, progress, counts, elapsed time and avg_kl_div against its gate.

Skipped samples (cache misses) are counted on the line itself: a cache-hit helper that quietly
scored half its samples must not look like a full run.
"""

from __future__ import annotations

import math

from rich.table import Table
from rich.text import Text
from textual import events
from textual.dom import DOMNode
from textual.message import Message
from textual.widgets import Static

from kltui import fmt
from kltui.metrics.k3 import within_threshold
from kltui.metrics.summary import Summary
from kltui.registry import same_engine
from kltui.session.helper_view import HelperView
from kltui.session.labels import MANY_SERVERS, server_labels
from kltui.session.store import HelperState, SessionStore
from kltui.tui.widgets.floor_row import floor_cells
from kltui.tui.widgets.parts import part
from kltui.untrusted import safe
from kltui.words.screen_progress import Waiting
from kltui.words.screen_progress import before_decode as before_decode_parts

PHASE_ICON = {
    "queued": "◌",
    "starting": "◔",
    "warm": "◔",
    "flush": "◔",
    "decode": "◑",
    "turn1": "◑",
    "turn2": "◑",
    "prefill": "◕",
    "score": "◕",
    "done": "●",
    "error": "✗",
}
BAR_WIDTH = 24
# below this many columns (the full row's width) a row drops its bar, phase word, time and
# labels, so that avg_kl_div and PASS/FAIL stay whole (80x24 and 120x40 terminals)
COMPACT_WIDTH = 136


# a row's parts by state, coloured in app.tcss
PHASE_CLASS = {"done": "helper--done", "error": "helper--error"}  # any other: helper--active
RESULT_CLASS = {
    "pass": "helper--pass",
    "fail": "helper--fail",
    "vacuous": "helper--warn",
    "invalid": "helper--warn",
    "error": "helper--fail",
}
RESULT_LABEL = {
    "pass": "✓ PASS",
    "fail": "✗ FAIL",
    "vacuous": "⚠ VACUOUS",
    "invalid": "⚠ INVALID",
    "error": "✗ ERROR",
}


def bar(done: float, decoded: float, width: int, node: DOMNode) -> Text:
    """Solid = scored or skipped; lighter = decoded and waiting for the prefill side."""
    done = max(0.0, min(1.0, done))
    decoded = max(done, min(1.0, decoded))
    n_done = int(round(done * width))
    n_dec = int(round(decoded * width)) - n_done
    t = Text(no_wrap=True)
    t.append("━" * n_done, style=part(node, "helper--bar"))
    t.append("━" * n_dec, style=part(node, "helper--bar", "helper--decoded"))
    t.append("─" * (width - n_done - n_dec), style="dim")
    return t


def result_mark(summary: Summary | None, st: HelperState, node: DOMNode) -> Text:
    """A helper's result as a mark: within or beyond its gate so far, else its final status."""
    if summary is None:
        return Text("–", style="dim")
    status = summary.status
    if summary.live:
        avg = summary.avg_kl_div
        if avg is None or (isinstance(avg, float) and math.isnan(avg)):
            return Text("…", style="dim")
        within = within_threshold(avg, HelperView.of(st, summary).threshold)
        live = "helper--within" if within else "helper--beyond"
        return Text("✓ so far" if within else "✗ so far", style=part(node, live))
    if status not in RESULT_CLASS:
        return safe(status or "?", style="bold")
    return Text(RESULT_LABEL[status], style=part(node, "helper--result", RESULT_CLASS[status]))


def pace(view: HelperView, *, compact: bool = False) -> Text:
    """The decode's speed and time left while it runs (" · 410 tok/s · ETA 1m05s"; compact:
    the ETA alone); empty before the speed is known."""
    t = Text(no_wrap=True)
    rate, eta = view.decode_rate, view.decode_eta
    if rate is None or view.state.phase != "decode":
        return t
    if not compact:
        t.append(f" · {rate:,.0f} tok/s", style="dim")
    if eta is not None:
        t.append(f" · ETA {fmt.duration(eta)}", style="dim")
    return t


# The /generate requests of each SGLang helper, in order (the phases that send one); flushes and
# scoring are not counted. Other helpers' requests are not known ahead.
REQUESTS = {
    "match": ("decode", "prefill"),
    "prefill_cache_hit": ("warm", "decode", "prefill"),
    "decode_cache_hit": ("turn1", "decode", "prefill"),
}
# A phase that decodes every prompt for max_new_tokens: an earlier helper's scored decode of the
# same size on the same server took about as long.
DECODES = frozenset({"decode", "turn1"})
# what a phase without an estimate waits for
WAITS = {"decode": Waiting.FIRST_TOKENS, "flush": Waiting.FLUSH}


def requests_done(st: HelperState) -> tuple[int, int] | None:
    """(requests answered, requests in all) of a helper whose requests are known."""
    plan = REQUESTS.get(st.helper)
    if plan is None:
        return None
    return sum(1 for p in plan if p in st.phase_seconds), len(plan)


def decode_estimate(st: HelperState, others: list[HelperState]) -> float | None:
    """Seconds a decode phase of `st` should take: the longest scored decode of an earlier
    helper on the same server with as many samples and as many new tokens (None: none yet,
    or `st` is not decoding)."""
    if st.phase not in DECODES:
        return None
    size = (st.n_samples, st.settings.get("max_new_tokens"))
    took = [
        o.phase_seconds["decode"]
        for o in others
        if o is not st
        and o.server == st.server
        and "decode" in o.phase_seconds
        and (o.n_samples, o.settings.get("max_new_tokens")) == size
    ]
    return max(took) if took else None


def before_decode(st: HelperState, others: list[HelperState], *, compact: bool = False) -> Text:
    """What is measured before the decode streams: requests answered of all, the phase's time
    so far and the time left by an earlier helper's decode of the same size ("1/3 requests ·
    42.0s · ETA ~1m05s"), else "estimating" and what it waits for."""
    done = requests_done(st)
    spent = st.phase_elapsed
    estimate = decode_estimate(st, others)
    left = None if estimate is None else estimate - spent
    waiting = WAITS.get(st.phase, Waiting.ANSWER)
    t = Text(no_wrap=True)
    for i, piece in enumerate(before_decode_parts(done, spent, left, waiting, compact=compact)):
        t.append(piece, style="bold" if i == 0 and done is not None else "dim")
    return t


def helper_label(st: HelperState, labels: dict[str, str]) -> str:
    """The helper's name, with its server's short label when the run has several servers."""
    return f"{st.helper}@{labels[st.server]}" if len(labels) > 1 else st.helper


def shown_states(store: SessionStore, selected: str | None) -> tuple[list, tuple[int, int]]:
    """The helper states that get a row, and (helpers, servers) left out: with many servers
    only those of the selected helper's server (the first server's until one is selected)."""
    states = store.by_server()  # with --concurrency, helpers start interleaved
    servers = list(dict.fromkeys(st.server for st in states))
    if len(servers) <= MANY_SERVERS:
        return states, (0, 0)
    chosen = store.helpers.get(selected) if selected else None
    server = chosen.server if chosen is not None else servers[0]
    mine = [st for st in states if st.server == server]
    return mine, (len(states) - len(mine), len(servers) - 1)


class HelperProgress(Static):
    """Lines are clickable: a click selects that helper for the heatmap and table."""

    DEFAULT_CLASSES = "panel"  # its look: `.panel` in app.tcss
    COMPONENT_CLASSES = {
        "helper--selected",
        "helper--active",
        *PHASE_CLASS.values(),
        "helper--bar",
        "helper--decoded",
        "helper--skipped",
        "helper--result",
        *RESULT_CLASS.values(),
        "helper--within",
        "helper--beyond",
    }

    class Selected(Message):
        """A helper row was chosen (its key)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._keys: list[str | None] = []
        self._laid_out_rows = -1
        self._shown: tuple | None = None
        self._compact: bool | None = None

    def on_resize(self) -> None:
        """Lay the rows out again when the width crosses the compact limit."""
        if self._shown is not None and self._compact != self._is_compact():
            self.show(*self._shown)

    def _is_compact(self) -> bool:
        return 0 < self.size.width < COMPACT_WIDTH

    def show(
        self,
        store: SessionStore | None,
        selected: str | None,
        summaries,
        elapsed: dict[str, float],
    ) -> None:
        """One row per helper (and per queued one) of `store`, `selected` marked."""
        self._shown = (store, selected, summaries, elapsed)
        compact = self._compact = self._is_compact()
        grid = self._grid(compact)
        self._keys = []
        # compact rows carry the values only: the border names them
        self.border_title = "helpers · avg_kl_div / gate" if compact else "helpers"
        self.border_subtitle = "] next · [ prev · click selects"
        if store is None or (store.run is None and not store.helpers):
            grid.add_row("", Text("no run yet", style="dim"))
            self._keys.append(None)
            self.update(grid)
            return
        self._helper_rows(grid, store, selected, summaries, elapsed)
        if store.finished is None:
            self._queued_rows(grid, store)
        # A line per helper: the height only changes when a helper appears.
        self.update(grid, layout=len(self._keys) != self._laid_out_rows)
        self._laid_out_rows = len(self._keys)

    @staticmethod
    def _grid(compact: bool) -> Table:
        """The rows' columns: all of them, or (compact) what must survive 80 columns: the
        name, the counts, avg_kl_div and the verdict."""
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(width=1)
        grid.add_column(min_width=10 if compact else 18, max_width=36, no_wrap=True)
        if compact:
            grid.add_column(width=1, no_wrap=True)
            grid.add_column(no_wrap=True)
            grid.add_column(no_wrap=True, justify="right")
            grid.add_column(width=9, no_wrap=True)
        else:
            grid.add_column(width=10, no_wrap=True)
            grid.add_column(width=BAR_WIDTH, no_wrap=True)
            grid.add_column(min_width=30, no_wrap=True)
            grid.add_column(width=7, justify="right", no_wrap=True)
            grid.add_column(min_width=22, no_wrap=True)
            grid.add_column(width=11, no_wrap=True)
        return grid

    def _helper_rows(self, grid: Table, store: SessionStore, selected, summaries, elapsed) -> None:
        """A row per started helper (with many servers: those of one), its floors' row if any,
        and a line counting the helpers left out."""
        compact = self._compact
        labels = server_labels(st.server for st in store.helpers.values())
        states, hidden = shown_states(store, selected)
        others = list(store.helpers.values())
        for st in states:
            self._keys.append(st.key)
            summary = summaries.get(st)
            row = self._row(st, st.key == selected, labels, summary, elapsed, others)
            if compact:
                row = (row[0], row[1], row[2][:1], row[4], row[6], row[7])
            grid.add_row(*row)
            if (cells := floor_cells(summary)) is not None:
                # cross_engine's floors: each engine against itself, beside the gap
                self._keys.append(st.key)
                label, reading, floors, gap = cells
                if compact:
                    grid.add_row(" ", label, "", floors, gap, "")
                else:
                    grid.add_row(" ", label, "", reading, floors, "", gap, "")
        if hidden[0]:
            self._keys.append(None)
            # ] and [ still step through every helper; c lists the servers side by side
            more = Text(f"+ {hidden[0]} more on {hidden[1]} servers (c)", style="dim")
            grid.add_row(" ", more)

    def _queued_rows(self, grid: Table, store: SessionStore) -> None:
        """A dim row per helper of the run not started yet."""
        started = {st.helper for st in store.helpers.values()}
        for name in store.config.helpers:
            if name not in started and same_engine(name):
                self._keys.append(None)
                label = Text(name, style="dim")
                if self._compact:
                    grid.add_row(" ", label, Text("◌", style="dim"))
                else:
                    queued = Text("◌ queued", style="dim")
                    grid.add_row(" ", label, queued, bar(0, 0, BAR_WIDTH, self), "", "", "", "")

    def _row(self, st, is_sel, labels, summary, elapsed, others):
        sel = Text("▸", style=part(self, "helper--selected")) if is_sel else Text(" ")
        name = Text(helper_label(st, labels), style="bold" if is_sel else "")
        phase = st.phase
        icon = PHASE_ICON.get(phase, "◔")
        phase_t = Text(
            f"{icon} {phase}", style=part(self, PHASE_CLASS.get(phase, "helper--active"))
        )
        n = max(1, st.n_samples)
        done = (st.n_scored + len(st.skipped)) / n
        view = HelperView.of(st, summary)
        max_new = view.max_new_tokens
        if max_new:
            decoded = view.decoded / (n * max_new)
        else:
            decoded = st.n_decoded / n
        if phase == "done":
            done = decoded = 1.0 if st.n_samples else 0.0
        secs = elapsed.get(st.key)
        el = Text(fmt.duration(secs) if secs is not None else "", style="dim")
        avg = Text(no_wrap=True)
        if not self._compact:
            avg.append("avg_kl_div ", style="dim")
        value = summary.avg_kl_div if summary else None
        avg.append(fmt.sci(value), style="bold" if summary and not summary.live else "")
        avg.append(" / ", style="dim")
        avg.append(fmt.sci(view.threshold, 1), style="dim")
        return (
            sel,
            name,
            phase_t,
            bar(done, decoded, BAR_WIDTH, self),
            self._counts(st, view, others),
            el,
            avg,
            result_mark(summary, st, self),
        )

    def _counts(self, st: HelperState, view: HelperView, others: list[HelperState]) -> Text:
        """Samples scored and skipped; before the first, the decode's tokens and pace while it
        streams, and before that what `before_decode` can tell."""
        compact = bool(self._compact)
        counts = Text(no_wrap=True)
        skipped = len(st.skipped)
        if st.n_scored == 0 and not skipped and st.phase not in ("done", "error"):
            if st.phase != "decode" or not st.n_decoded:
                return before_decode(st, others, compact=compact)
            counts.append(f"decoded {st.n_decoded}/{st.n_samples}", style="bold")
            speed = pace(view, compact=compact)
            if not compact and not speed:  # the pace, once known, takes the count's room
                counts.append(f" · {view.decoded:,} tokens", style="dim")
            counts.append_text(speed)
        elif compact:
            counts.append(f"{st.n_scored}/{st.n_samples}", style="bold")
            if skipped:
                counts.append(" · ", style="dim")
                counts.append(f"{skipped} skipped", style=part(self, "helper--skipped"))
        else:
            counts.append(f"{st.n_scored}/{st.n_samples} scored", style="bold")
            counts.append(" · ", style="dim")
            counts.append(
                f"{skipped} skipped",
                style=part(self, "helper--skipped") if skipped else "dim",
            )
        return counts

    def on_click(self, event: events.Click) -> None:
        """Select the helper of the clicked line."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        key = self._keys[offset.y] if 0 <= offset.y < len(self._keys) else None
        if key:
            self.post_message(self.Selected(key))
