"""The dashboard's part in a `kltui ablate` sweep (a mixin of KltuiApp over `DashboardActions`):
the matrix of configurations on top (`a` brings it back), Enter on a row puts that
configuration's run on the dashboard, and a sweep is never re-run from the TUI (`r` is off: its
folder keeps every configuration once).

It is the `tui/sweep_feed.SweepSink` the feed drives; nothing here computes a figure.
"""

from __future__ import annotations

from textual.worker import WorkerState

from kltui.ablate.sweep import NOT_RUN
from kltui.outputs.ablation_matrix import RUNNING
from kltui.session.store import SessionStore
from kltui.tui.actions import DashboardActions
from kltui.tui.screens.ablation import AblationScreen
from kltui.tui.sweep_feed import SweepFeed
from kltui.untrusted import escape_controls
from kltui.words.ablation_sweep import nothing_to_show
from kltui.words.screen_toasts import Notice, notice

SWEEP_ACTIONS = frozenset({"sweep"})
# how long q waits for a running sweep to stop its servers (LaunchedServer.stop: SIGTERM, then
# SIGKILL after a grace of seconds)
STOP_WAIT_S = 30.0


class SweepActions(DashboardActions):
    """What a sweep adds to the dashboard's keys."""

    _matrix_helper: str | None = None  # the helper the matrix showed last

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`a` only in a sweep and on the dashboard itself; `r` never in a sweep."""
        sweep = isinstance(self.feed, SweepFeed)
        if action in SWEEP_ACTIONS:
            return sweep and len(self.screen_stack) == 1
        if action == "rerun" and sweep:
            return False
        return super().check_action(action, parameters)

    async def action_rerun(self) -> None:
        """A sweep is not re-run from here (the palette's entry comes this way too)."""
        if isinstance(self.feed, SweepFeed):
            self._say(notice(Notice.SWEEP_NO_RERUN))
            return
        await super().action_rerun()

    async def action_quit(self) -> None:
        """Quit; a sweep still running is stopped first and waited for (its servers stopped,
        the configuration cut short marked interrupted), so nothing outlives the TUI."""
        feed, worker = self.feed, self._feed_worker
        running = worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)
        if isinstance(feed, SweepFeed) and not feed.finished and running and worker is not None:
            self.notify("stopping the sweep: its servers are stopped, what was measured is kept")
            worker.cancel()
            if not await feed.settled(STOP_WAIT_S):
                self.notify(f"the sweep did not stop within {STOP_WAIT_S:g} s", severity="error")
        await super().action_quit()

    def action_sweep(self) -> None:
        """The matrix of configurations, back on top."""
        if isinstance(self.feed, SweepFeed):
            self.open_matrix()

    def key_a(self) -> None:
        """`a` on a dashboard that is not a sweep's (its binding is off there): say so, instead
        of a key press that does nothing visible."""
        if not isinstance(self.feed, SweepFeed) and len(self.screen_stack) == 1:
            self._say(notice(Notice.NOT_A_SWEEP))

    # ------------------------------------------------------------------ tui/sweep_feed.SweepSink
    def open_matrix(self) -> None:
        """The matrix on top of the dashboard, on the helper it showed last."""
        if not isinstance(self.feed, SweepFeed):
            return
        screen = AblationScreen(self.feed, self.theme_variables, self._matrix_helper)
        self.push_screen(screen, lambda name: self._opened(screen, name))

    def _opened(self, screen: AblationScreen, name: str | None) -> None:
        self._matrix_helper = screen.helper
        if name is not None:
            self.open_configuration(name)

    def open_configuration(self, name: str) -> None:
        """The dashboard on one configuration: its store once measured, what it measured so
        far while it runs (the dashboard then follows it), or why there is nothing to show."""
        feed = self.feed
        if not isinstance(feed, SweepFeed):
            return
        run = feed.run_of(name)
        store = feed.store_of(name)
        if run is None or store is None or store.run is None:
            self._say(escape_controls(nothing_to_show(name, run), 300))
            self.open_matrix()
            return
        live = feed.live.get(name)
        running = run.status == NOT_RUN and live is not None and live.phase == RUNNING
        feed.follow = running  # the running one is followed again; a finished one stays
        self.show_configuration(name, store, running=running)
        said = "measured so far, not a result" if run.error else run.status
        if running:
            said = "running"
        self._say(escape_controls(f"configuration {name} ({said}) · a: back to the matrix", 300))

    def show_configuration(self, name: str, store: SessionStore, *, running: bool) -> None:
        """The dashboard's panels on `store` (its first helper selected)."""
        feed = self.feed
        if isinstance(feed, SweepFeed):
            feed.shown = name
            run = feed.run_of(name)
            if feed.sweep is not None and run is not None:
                self.status.run_no = feed.sweep.runs.index(run) + 1  # configuration k of N
            self.status.recording = (
                str(feed.sweep.folder / run.recording) if feed.sweep and run else None
            )
            if feed.mode == "replay" and feed.sweep is not None:
                self.status.replay_label = f"sweep {feed.sweep.folder.name} · {name}"
        self.store = store
        self.summaries.clear()
        self._user_selected = False
        keys = [st.key for st in store.by_server()]
        self.selected = keys[0] if keys else None
        self.status.running = running
        self.status.message = None
        if not running:
            self._last_finished = store
        self.refresh_bindings()
        self._dirty = True

    def shown_run_ended(self, store: SessionStore) -> None:
        """The configuration on the dashboard ended."""
        self.status.running = False
        self._last_finished = store
        self._dirty = True

    def sweep_note(self, line: str) -> None:
        """A line of the sweep's (the chain's steps), as a toast."""
        self.notify(escape_controls(line, 300), timeout=6)
