"""The live dashboard: KltuiApp (its redraw is `redraw.py`, its keys `actions.py`; the entry
points the CLI calls are `launch.py`).

Events are applied to a SessionStore as they arrive (by `consume.pump`, in a worker) and only
mark the view dirty; a timer redraws at most REFRESH_HZ times a second, so a burst of thousands
of TokensDecoded events costs one redraw, not thousands.
"""

from __future__ import annotations

import asyncio
import re
import time

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.worker import Worker

from kltui.engines.identity import ServerIdentity
from kltui.readings.compare import RerunEquality
from kltui.run.flush_gate import LoopbackCheck, is_loopback, reasons_to_ask
from kltui.run.watch import POLL_INTERVAL_S, ServerWatch
from kltui.session.events import (
    Event,
    HelperStarted,
    Problem,
    RunFinished,
    RunStarted,
)
from kltui.session.store import SessionStore
from kltui.tui import themes
from kltui.tui.bindings import DASHBOARD_BINDINGS, all_binding_ids
from kltui.tui.commands import KltuiCommands
from kltui.tui.feeds import LiveFeed, ReplayFeed
from kltui.tui.monitor_actions import MonitorActions
from kltui.tui.monitor_feed import MonitorFeed
from kltui.tui.redraw import REFRESH_HZ, Redraw
from kltui.tui.screens.confirm_flush import ConfirmFlush
from kltui.tui.screens.dumps import DumpsScreen
from kltui.tui.summaries import Summaries
from kltui.tui.sweep_actions import SweepActions
from kltui.tui.sweep_feed import SweepFeed
from kltui.tui.widgets.counters import Counters
from kltui.tui.widgets.diagnosis import DiagnosisBar
from kltui.tui.widgets.footer import KltuiFooter
from kltui.tui.widgets.header import RunStatus, ServersPanel, TitleBar
from kltui.tui.widgets.heatmap import Heatmap
from kltui.tui.widgets.heatpanel import HeatmapPanel
from kltui.tui.widgets.history import HistoryPanel, RunRecord, record_of
from kltui.tui.widgets.progress import HelperProgress
from kltui.tui.widgets.samples import SampleTable
from kltui.untrusted import escape_controls
from kltui.words import compare as compare_words

TOAST_LINGER_S = 1.0  # how long an expired toast may still be drawn
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


class KltuiApp(Redraw, SweepActions, MonitorActions, App[int]):
    """The live dashboard (and replays): panels over one run's store."""

    CSS_PATH = "app.tcss"
    TITLE = "kltui"
    COMMANDS = App.COMMANDS | {KltuiCommands}
    NOTIFICATION_TIMEOUT = 4
    # the screen's size classes: app.tcss collapses panels on small terminals (80x24)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]

    # the helper whose heatmap, table and counters are shown (key "helper@server")
    selected: reactive[str | None] = reactive(None, init=False)

    BINDINGS = DASHBOARD_BINDINGS

    def __init__(
        self,
        feed: LiveFeed | ReplayFeed | SweepFeed | MonitorFeed,
        *,
        theme: str | None = None,
        keymap: dict[str, str] | None = None,
        watch: bool = False,
        token_text: dict[int, str] | None = None,
        screenshot_dir: str | None = None,
        read_only: bool = False,
        dump_dir: str | None = None,
        dumps_result: dict | None = None,
        loopback: LoopbackCheck = is_loopback,
    ) -> None:
        super().__init__()
        self.read_only = read_only
        self._dump_dir = dump_dir
        self._dumps_result = dumps_result
        self._loopback = loopback
        self.flush_settled: set[str] = set()  # servers not to ask about again this session
        self.feed = feed
        self._token_text = token_text
        self.user_keymap = dict(keymap or {})
        self.screenshot_dir = screenshot_dir
        self.screenshots: list[str] = []  # the paths `s` wrote this session
        self.watching = bool(watch) and feed.mode == "live"
        loaded = themes.load_themes()
        for t in loaded.themes:
            self.register_theme(t)
        self._startup_notes = list(loaded.errors)
        # each toast's (text, title, severity) -> until when it shows: one toast per message
        self._toasts: dict[tuple[str, str, str], float] = {}
        wanted = theme or themes.DEFAULT_THEME
        if wanted not in self.available_themes:
            valid = ", ".join(sorted(n for n in self.available_themes if "ansi" not in n))
            self._startup_notes.append(f"unknown theme {wanted!r}; choose from: {valid}")
            wanted = (
                themes.DEFAULT_THEME
                if themes.DEFAULT_THEME in self.available_themes
                else ("textual-dark")
            )
        self.theme = wanted
        if self.user_keymap:
            self.set_keymap(self.user_keymap)
            unknown = sorted(set(self.user_keymap) - all_binding_ids())
            if unknown:
                self._startup_notes.append(f"keymap: unknown binding id(s) {', '.join(unknown)}")
        self.store: SessionStore | None = None
        self.status = RunStatus(mode=feed.mode)
        if isinstance(feed, ReplayFeed):
            self.status.replay_label = feed.label()
        self.history: list[RunRecord] = []
        self.summaries = Summaries()
        self.run_gen = 0
        self.interrupted = False
        self.last_message = ""
        self._last_finished: SessionStore | None = None
        self._seen_version = -1
        self._dirty = True
        self._last_table = 0.0
        self._last_progress = 0.0
        self._feed_worker: Worker | None = None
        self._sigs: dict[str, tuple] = {}
        self._user_selected = False
        self._watch: ServerWatch | None = None
        self.exiting = False  # set once the app is shutting down: no more redraws or toasts

    def watch_selected(self) -> None:
        """Redraw the panels for the newly selected helper."""
        self._mark_dirty()  # the panels follow on the next redraw tick

    # ------------------------------------------------------------------ layout
    @property
    def token_text(self) -> dict[int, str] | None:
        """Given text, else what the server sent with scored samples (untrusted either way)."""
        if self._token_text:
            return self._token_text
        return self.store.token_text if self.store is not None else None

    def compose(self) -> ComposeResult:
        """The dashboard's panels."""
        yield TitleBar(id="titlebar")
        yield ServersPanel(id="servers")
        yield HelperProgress(id="progress")
        with Horizontal(id="main"):
            with Vertical(id="side"):
                yield Counters(id="counters")
                yield HistoryPanel(id="history")
            with Vertical(id="center"):
                yield HeatmapPanel(id="heatpanel")
                yield SampleTable(id="samples")
        yield DiagnosisBar(id="diagnosis")
        yield KltuiFooter()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity="information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast is shown literally: its text carries server, file and recording strings,
        and Textual would otherwise parse `[...]` as markup (and crash on a stray `[/]`).

        A message already on screen is not shown again: a dead server's error comes once per
        retry, and identical toasts would stack up over the sample table."""
        text, head = escape_controls(message, 300), escape_controls(title, 80)
        # the same message with other figures (a retry's "after 4 attempts over 1.9 s") is
        # the same message
        key = (_NUMBER.sub("#", text), head, str(severity))
        now = time.monotonic()
        # an expired toast's widget leaves the screen a moment after its timeout: until then
        # the same message still counts as on screen (else two identical toasts, briefly)
        self._toasts = {k: t for k, t in self._toasts.items() if t + TOAST_LINGER_S > now}
        if key in self._toasts:
            return
        self._toasts[key] = now + (self.NOTIFICATION_TIMEOUT if timeout is None else timeout)
        super().notify(
            text,
            title=head,
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """kltui's theme variables, for themes that do not set them."""
        return dict(themes.VARIABLE_DEFAULTS)

    def get_system_commands(self, screen):
        """Textual's palette entries less its "Screenshot": ours ("Save screenshot (SVG)")
        names the file after the helper, writes it to the runs folder and says where."""
        for command in super().get_system_commands(screen):
            if command.title != "Screenshot":
                yield command

    def get_driver_class(self):
        """Under `kltui web`, the web driver that exits when its browser tab goes away."""
        driver = super().get_driver_class()
        if driver.__name__ == "WebDriver":
            from kltui.tui.webdriver import ClientGoneWebDriver

            return ClientGoneWebDriver
        return driver

    def on_mount(self) -> None:
        """Show the startup notes, start the redraw timer, --watch's poll and the feed."""
        if self.read_only:
            self.notify("read-only: re-run and screenshots are off", timeout=4)
        for note in self._startup_notes:
            self.notify(escape_controls(note), severity="warning", timeout=8)
        self.theme_changed_signal.subscribe(self, lambda _t: self.refresh_views(force=True))
        self.set_interval(1 / REFRESH_HZ, self._tick)
        self.query_one(Heatmap).focus()
        if self.watching and isinstance(self.feed, LiveFeed):  # --watch: live runs only
            self._watch = ServerWatch(self.feed.servers, self.feed.cfg.server_api_key())
            self.set_interval(POLL_INTERVAL_S, self._watch_tick)
        self.start_feed()
        if self._dumps_result is not None:
            self.push_screen(DumpsScreen(self._dumps_result))

    async def _on_exit_app(self) -> None:
        self.exiting = True
        await super()._on_exit_app()

    async def on_unmount(self) -> None:
        """Stop watching the servers."""
        if self._watch is not None:
            await self._watch.aclose()

    # ------------------------------------------------------------------ feed (Sink)
    def start_feed(self) -> None:
        """Start the feed (a live run or a replay) in a worker."""
        self._feed_worker = self.run_worker(
            self.feed.run(self), group="feed", exclusive=True, exit_on_error=False
        )

    def feed_start_run(self) -> SessionStore:
        """A run starts: a fresh store, the status says so."""
        self.run_gen += 1
        self.store = SessionStore()
        self.summaries.clear()
        self.status.running = True
        self.status.run_no = len(self.history) + 1
        self.status.message = "connecting to " + ", ".join(self.feed.servers)
        self.refresh_bindings()  # a new run has no problems yet: `e` leaves the footer
        self._mark_dirty()
        return self.store

    def feed_event(self, ev: Event) -> None:
        """One event: mark the dashboard dirty and follow the helper being measured."""
        self._dirty = True
        store = self.store
        if store is None:  # events come only once feed_start_run made the store
            return
        if isinstance(ev, Problem) and len(store.problems) == 1:
            self.refresh_bindings()  # the footer shows `e` from the first problem on
        match ev:
            case HelperStarted():
                key = f"{ev.helper}@{ev.server}"
                # Follow the helper that is running, until the user picks one.
                if not self._user_selected or self.selected not in store.helpers:
                    self.selected = key
            case RunStarted():
                self.status.message = None
                if any(not ServerIdentity.of(s).error for s in ev.servers):
                    self.status.error = None  # connected: the last attempt's error is history
            case Problem() if self.feed.mode == "live" and not self.exiting:
                severity = "error" if ev.fatal else "warning"
                text = escape_controls(f"{ev.source}: {ev.message}", 300)
                self.notify(text, severity=severity, timeout=8 if ev.fatal else 5)
            case RunFinished() if not self._user_selected:
                # Land on what needs looking at: the first helper that did not pass.
                for key, st in store.helpers.items():
                    if st.summary is not None and st.summary.status not in (None, "pass"):
                        self.selected = key
                        break

    def feed_end_run(
        self,
        store: SessionStore,
        *,
        counted: bool,
        recording: str | None,
        equality: RerunEquality | None = None,
    ) -> None:
        """The run ended: into the history, with its equality with the run before (computed
        where runs are counted: the run driver, or the replay feed)."""
        self.status.running = False
        self.status.recording = recording or self.status.recording
        if counted and store.run is not None:
            identical, difference = None, None
            if equality is not None:
                identical, difference = equality.identical, compare_words.rerun(equality)
                self.notify(
                    escape_controls(
                        f"run {len(self.history) + 1} vs the one before: {difference}", 300
                    ),
                    timeout=6,
                )
            self.history.append(
                record_of(len(self.history) + 1, store, identical, recording, difference)
            )
            self._last_finished = store
            if self._watch is not None:
                self._watch.remember(store.identities())
        elif store.run is not None:
            self._last_finished = store
        if not counted:  # a connection that failed: keep its error while the next one runs
            self.status.error = next(iter(self.error_lines()), self.status.error)
        self._mark_dirty()

    async def confirm_flush(self, client) -> bool:
        """Before the first flush of a server (the runner asks): ask the user when the server
        may be shared, once per server per session; False cancels the run."""
        url = client.url
        if url in self.flush_settled or getattr(
            getattr(self.feed, "cfg", None), "yes_flush", False
        ):
            return True
        reasons = await reasons_to_ask(client, self._loopback)
        if reasons:
            answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

            def answered(yes: bool | None) -> None:
                if not answer.done():
                    answer.set_result(bool(yes))

            self.push_screen(
                ConfirmFlush(url, reasons, read_only=self.read_only), callback=answered
            )
            if not await answer:
                self.last_message = f"run cancelled: {url} was not flushed"
                return False
        self.flush_settled.add(url)
        return True

    def feed_retry(self, seconds: int | None, attempt: int) -> None:
        """No server answered: show the countdown to the next attempt."""
        self.status.retry_in = seconds
        self.status.retry_attempt = attempt
        self.status.running = seconds is None
        self._mark_dirty()

    def feed_error(self, message: str) -> None:
        """The run could not go on: show why."""
        self.last_message = message
        self.status.error = f"error: {escape_controls(message, 300)}"
        self.notify(escape_controls(message, 300), severity="error", timeout=10)
