"""DashboardHost: what KltuiApp's mixins (`redraw.py`, `actions.py`) use of their host, typed.

For the type checker only: at run time the mixins derive from `object` and KltuiApp supplies
all of it; mypy checks KltuiApp's own definitions against these declarations, and the
mixins' use of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App
    from textual.reactive import reactive
    from textual.worker import Worker

    from kltui.run.watch import ServerWatch
    from kltui.session.store import HelperState, SessionStore
    from kltui.tui.feeds import LiveFeed, ReplayFeed
    from kltui.tui.monitor_feed import MonitorFeed
    from kltui.tui.summaries import Summaries
    from kltui.tui.sweep_feed import SweepFeed
    from kltui.tui.widgets.header import RunStatus
    from kltui.tui.widgets.history import RunRecord

    class DashboardHost(App[int]):
        """KltuiApp's state and methods as its mixins see them (set in KltuiApp.__init__)."""

        read_only: bool
        feed: LiveFeed | ReplayFeed | SweepFeed | MonitorFeed
        store: SessionStore | None
        # the reactive itself, so that `type(self).selected` is one (set_reactive)
        selected: reactive[str | None] = reactive(None, init=False)
        status: RunStatus
        history: list[RunRecord]
        summaries: Summaries
        run_gen: int
        interrupted: bool
        exiting: bool
        watching: bool
        last_message: str
        screenshot_dir: str | None
        screenshots: list[str]
        user_keymap: dict[str, str]
        _dump_dir: str | None
        _feed_worker: Worker | None
        _sigs: dict[str, tuple]
        _dirty: bool
        _seen_version: int
        _last_table: float
        _last_progress: float
        _last_finished: SessionStore | None
        _user_selected: bool
        _watch: ServerWatch | None

        @property
        def token_text(self) -> dict[int, str] | None:
            """Token id -> text for drill-downs (app.py)."""

        def start_feed(self) -> None:
            """Start the feed's worker (app.py)."""

        def refresh_views(self, *, table: bool = True, force: bool = False) -> None:
            """Redraw the panels whose inputs changed (redraw.py)."""

        def selected_state(self) -> HelperState | None:
            """The selected helper's state (actions.py)."""

else:
    DashboardHost = object
