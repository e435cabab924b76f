"""How the dashboard redraws: events only mark it dirty; a timer redraws at most REFRESH_HZ
times a second, and each panel only when the signature of what it shows changed.

A mixin of KltuiApp (kltui.tui.app), which holds the state it reads.
"""

from __future__ import annotations

import dataclasses
import time

from rich.text import Text
from textual.css.query import NoMatches

from kltui.readings.diagnosis import diagnose
from kltui.registry import same_engine
from kltui.session.labels import server_labels
from kltui.session.store import HelperState
from kltui.tui.host import DashboardHost
from kltui.tui.widgets.counters import Counters
from kltui.tui.widgets.diagnosis import DiagnosisBar
from kltui.tui.widgets.header import ServersPanel, TitleBar
from kltui.tui.widgets.heatmap import Heatmap
from kltui.tui.widgets.heatpanel import HeatmapPanel
from kltui.tui.widgets.history import HistoryPanel
from kltui.tui.widgets.progress import HelperProgress
from kltui.tui.widgets.samples import SampleTable
from kltui.untrusted import escape_controls, safe

REFRESH_HZ = 15
TABLE_HZ = 4


class Redraw(DashboardHost):
    """How the dashboard redraws (a mixin of KltuiApp; its host's part: DashboardHost)."""

    # ------------------------------------------------------------------ redraw
    def _mark_dirty(self) -> None:
        self._dirty = True

    def _elapsed(self) -> dict[str, float]:
        """Each helper's seconds on the store's one clock (a replay's is the recording's)."""
        store = self.store
        return {k: st.elapsed for k, st in store.helpers.items()} if store else {}

    def _tick(self) -> None:
        if self.exiting or not self.is_running:
            # Tearing down: the widgets are going, so a redraw half-fails (NoMatches), stays
            # dirty and was retried every tick, a repaint each time, for as long as the
            # teardown took.
            return
        store = self.store
        version = store.version if store else -1
        now = time.monotonic()
        changed = self._dirty or version != self._seen_version
        if not changed:
            if self.status.running and now - self._last_progress > 0.5:
                self._refresh_progress()
            return
        self._dirty = False
        self._seen_version = version
        try:
            self.refresh_views(table=now - self._last_table > 1 / TABLE_HZ)
        except NoMatches:
            # another screen is on top: the dashboard catches up once it is back
            self._dirty = True

    def refresh_views(self, *, table: bool = True, force: bool = False) -> None:
        """Redraw the panels whose inputs changed (also called by tests and benches).

        Each panel is redrawn only when its signature changes: a Static update costs a
        screen layout, and most panels do not change while tokens stream in.
        """
        store = self.store
        if force:
            self._sigs.clear()
        if store is not None and self.selected not in store.helpers and store.helpers:
            # drawn right now: no need for the watcher's redraw
            self.set_reactive(type(self).selected, next(iter(store.helpers)))
        helpers = store.helpers if store is not None else {}
        theme = self.theme
        run_sig = (self.run_gen, theme, store.run is not None if store else None)
        status = dataclasses.astuple(self.status)
        problems = len(store.problems) if store else 0
        verdict = store.finished.verdict if store and store.finished else None
        if self._changed("title", (run_sig, status, problems, verdict, self.size)):
            self.query_one(TitleBar).show(store, self.status)
        if self._changed("servers", (run_sig, status)):
            self.query_one(ServersPanel).show(store, self.status)
        self._refresh_progress()
        st = self.selected_state()
        summary = self.summaries.get(st) if st is not None else None
        if self._changed("counters", (run_sig, self.selected, id(summary))):
            self.query_one(Counters).show(st, summary, self._helper_name(st))
        if self._changed(
            "history", (theme, len(self.history), self.selected, self.watching, self.status.watch)
        ):
            self.query_one(HistoryPanel).show(self.history, self.selected, self.watching)
        hm = self.query_one(Heatmap)
        hm.show(st, self.run_gen)
        self.query_one(HeatmapPanel).border_title = self._heat_title(st)
        if table:
            self._last_table = time.monotonic()
            self.query_one(SampleTable).show(st, self.run_gen, hm.palette)
        else:
            self._dirty = True  # the table catches up on a later tick
        finished = tuple(id(h.summary) for h in helpers.values())
        error = self.error_line()
        if self._changed("diagnosis", (run_sig, finished, error, verdict)):
            diags = diagnose(store) if store is not None and helpers else []
            multi = len({h.server for h in helpers.values()}) > 1
            pending = 0
            if store is not None and store.finished is None and store.run is not None:
                configured = [h for h in store.config.helpers if same_engine(h)]
                done = {h.helper for h in helpers.values() if h.summary is not None}
                pending = len(self.feed.servers) * len(configured) - len(done)
            ended = verdict is not None or self.status.retry_in is not None
            self.query_one(DiagnosisBar).show(diags, multi, max(0, pending), error, ended)

    def error_lines(self, store=None) -> list[str]:
        """The errors of `store` (the run shown) as `kltui check` prints them (`error: SOURCE:
        MESSAGE`), else the error that ended the connection attempt before it."""
        store = store if store is not None else self.store
        fatal = [p for p in store.problems if p.fatal] if store is not None else []
        if fatal:
            return [escape_controls(f"error: {p.source}: {p.message}", 400) for p in fatal]
        return [self.status.error] if self.status.error else []

    def error_line(self) -> str | None:
        """The error line of the run shown, with how many more there are."""
        lines = self.error_lines()
        if not lines:
            return None
        more = f" (+{len(lines) - 1} more: e)" if len(lines) > 1 else ""
        return lines[0] + more

    def _changed(self, panel: str, signature: tuple) -> bool:
        if self._sigs.get(panel) == signature:
            return False
        self._sigs[panel] = signature
        return True

    def _refresh_progress(self) -> None:
        self._last_progress = time.monotonic()
        store = self.store
        elapsed = self._elapsed()
        rows = tuple(
            (
                k,
                h.phase,
                h.n_scored,
                len(h.skipped),
                h.n_decoded,
                sum(h.decoded_len.values()),
                id(h.summary),
                round(elapsed.get(k, 0.0), 1),
            )
            for k, h in (store.helpers.items() if store else ())
        )
        sig = (
            self.run_gen,
            self.theme,
            self.selected,
            rows,
            store.finished is None if store else None,
        )
        if self._changed("progress", sig):
            self.query_one(HelperProgress).show(store, self.selected, self.summaries, elapsed)

    def _heat_title(self, st: HelperState | None) -> Text:
        # A Text, not a str: Textual parses a str title as markup (helper and server names
        # come from a recording or a server).
        if st is None:
            return Text("k3 heatmap")
        name = self._helper_name(st)
        return safe(f"k3 heatmap · {name} · rows = samples, columns = positions")

    def _helper_name(self, st: HelperState | None) -> str:
        """The helpers panel's name for `st` (`match@:30001` when the run has several servers:
        it tells two servers on one host apart)."""
        if st is None:
            return ""
        labels = server_labels(s.server for s in self.store.helpers.values()) if self.store else {}
        return (
            f"{st.helper}@{labels[st.server]}"
            if len(labels) > 1 and st.server in labels
            else st.helper
        )
