"""The dashboard's part in `kltui monitor` (a mixin of KltuiApp over `DashboardActions`): the
monitor screen on top (`m` brings it back), Enter on a probe puts that probe's recording on the
dashboard, and a monitor is never re-run from the TUI (`r` is off: it probes on its own).

It is the `tui/monitor_feed.MonitorSink` the feed drives; nothing here computes a figure.
"""

from __future__ import annotations

from textual.worker import WorkerState

from kltui.tui.actions import DashboardActions
from kltui.tui.monitor_feed import MonitorFeed
from kltui.tui.screens.monitor import MonitorScreen
from kltui.untrusted import escape_controls
from kltui.words.screen_toasts import Notice, notice

MONITOR_ACTIONS = frozenset({"monitor"})
STOP_WAIT_S = 30.0  # how long q waits for the probe going on to be cut short and recorded


class MonitorActions(DashboardActions):
    """What a monitor adds to the dashboard's keys."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`m` only under a monitor and on the dashboard itself; `r` never under a monitor."""
        monitor = isinstance(self.feed, MonitorFeed)
        if action in MONITOR_ACTIONS:
            return monitor and len(self.screen_stack) == 1
        if action == "rerun" and monitor:
            return False
        return super().check_action(action, parameters)

    async def action_rerun(self) -> None:
        """A monitor probes on its own schedule (the palette's entry comes this way too)."""
        if isinstance(self.feed, MonitorFeed):
            self._say(notice(Notice.MONITOR_NO_RERUN))
            return
        await super().action_rerun()

    async def action_quit(self) -> None:
        """Quit; a probe going on is cut short first (recorded as interrupted)."""
        feed, worker = self.feed, self._feed_worker
        running = worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)
        if isinstance(feed, MonitorFeed) and not feed.finished and running and worker is not None:
            worker.cancel()
            if not await feed.settled(STOP_WAIT_S):
                self.notify(f"the probe did not stop within {STOP_WAIT_S:g} s", severity="error")
        await super().action_quit()

    def action_monitor(self) -> None:
        """The monitor screen, back on top."""
        if isinstance(self.feed, MonitorFeed):
            self.open_monitor()

    def key_m(self) -> None:
        """`m` on a dashboard that is not a monitor's (its binding is off there): say so,
        instead of a key press that does nothing visible."""
        if not isinstance(self.feed, MonitorFeed) and len(self.screen_stack) == 1:
            self._say(notice(Notice.NOT_A_MONITOR))

    # ------------------------------------------------------------------ tui/monitor_feed.MonitorSink
    def open_monitor(self) -> None:
        """The monitor screen on top of the dashboard."""
        if not isinstance(self.feed, MonitorFeed):
            return
        from kltui.tui.widgets.heatmap import Heatmap

        heatmaps = self.query(Heatmap)
        palette = heatmaps.first().palette if heatmaps else None
        self.push_screen(MonitorScreen(self.feed, palette), self._probe_chosen)

    def _probe_chosen(self, number: int | None) -> None:
        if number is not None:
            self.open_probe(number)

    def open_probe(self, number: int) -> None:
        """The dashboard on one probe's recording, or why there is nothing to show."""
        feed = self.feed
        if not isinstance(feed, MonitorFeed):
            return
        store, why = feed.store_of(number)
        if store is None or store.run is None:
            self._say(escape_controls(f"probe {number}: nothing to show ({why})", 300))
            self.open_monitor()
            return
        feed.shown = number
        result = feed.result(number)
        self.status.recording = result.recording if result else None
        self.status.run_no = number
        self.store = store
        self.summaries.clear()
        self._user_selected = False
        keys = [st.key for st in store.by_server()]
        self.selected = keys[0] if keys else None
        self.status.running = False
        self.status.message = None
        self._last_finished = store
        self.refresh_bindings()
        self._dirty = True
        self._say(escape_controls(f"probe {number} · m: back to the monitor", 300))

    def monitor_note(self, line: str) -> None:
        """A change of reading, as a toast."""
        self.notify(escape_controls(line, 300), timeout=8)
