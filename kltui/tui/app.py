"""The live dashboard: KltuiApp, and the entry points the CLI calls (run_app, run_replay).

Events are applied to a SessionStore as they arrive (by `consume.pump`, in a worker) and only
mark the view dirty; a timer redraws at most REFRESH_HZ times a second, so a burst of thousands
of TokensDecoded events costs one redraw, not thousands.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import time
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer
from textual.worker import Worker, WorkerState

from kltui.errors import EXIT_INTERRUPTED, EXIT_SERVER, exit_code
from kltui.helpers.registry import same_engine
from kltui.run.config import RunConfig
from kltui.run.flush_gate import LoopbackCheck, is_loopback, reason_to_ask
from kltui.run.watch import POLL_INTERVAL_S, ServerWatch
from kltui.session.compare import cross_server, describe_rerun, rerun_equality
from kltui.session.diagnosis import diagnose
from kltui.session.events import (
    Event,
    HelperStarted,
    Problem,
    RunFinished,
    RunStarted,
)
from kltui.session.recording import read_recording
from kltui.session.store import HelperState, SessionStore
from kltui.tui import themes
from kltui.tui.commands import KltuiCommands
from kltui.tui.feeds import LiveFeed, ReplayFeed
from kltui.tui.screens.compare import CompareScreen
from kltui.tui.screens.confirm_flush import ConfirmFlush
from kltui.tui.screens.diagnosis import DiagnosisScreen
from kltui.tui.screens.drilldown import DrillDown
from kltui.tui.screens.dumps import DumpsScreen
from kltui.tui.screens.help import HelpScreen
from kltui.tui.screens.problems import ProblemsScreen
from kltui.tui.summaries import Summaries
from kltui.tui.widgets.counters import Counters
from kltui.tui.widgets.diagnosis import DiagnosisBar
from kltui.tui.widgets.header import RunStatus, ServersPanel, TitleBar
from kltui.tui.widgets.heatmap import Heatmap
from kltui.tui.widgets.heatpanel import HeatmapPanel
from kltui.tui.widgets.history import HistoryPanel, RunRecord, record_of
from kltui.tui.widgets.progress import HelperProgress
from kltui.tui.widgets.samples import SampleTable
from kltui.untrusted import escape_controls, safe

REFRESH_HZ = 15
TABLE_HZ = 4


class KltuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "kltui"
    COMMANDS = App.COMMANDS | {KltuiCommands}
    NOTIFICATION_TIMEOUT = 4

    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.interrupt"),
        Binding("question_mark", "help", "Help", key_display="?", id="app.help"),
        Binding(
            "right_square_bracket",
            "cycle_helper(1)",
            "Next helper",
            key_display="]",
            id="app.next-helper",
        ),
        Binding(
            "left_square_bracket",
            "cycle_helper(-1)",
            "Prev helper",
            key_display="[",
            show=False,
            id="app.prev-helper",
        ),
        Binding("f", "first_divergence", "First divergence", id="app.first-divergence"),
        Binding("r", "rerun", "Re-run", id="app.rerun"),
        Binding("s", "save_svg", "Screenshot", id="app.screenshot"),
        Binding("e", "problems", "Problems", show=False, id="app.problems"),
        Binding("d", "diagnosis", "Diagnosis", show=False, id="app.diagnosis"),
        Binding("c", "compare", "Compare servers", show=False, id="app.compare"),
    ]

    def __init__(
        self,
        feed: LiveFeed | ReplayFeed,
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
        self.watching = bool(watch) and feed.mode == "live"
        loaded = themes.load_themes()
        for t in loaded.themes:
            self.register_theme(t)
        self._startup_notes = list(loaded.errors)
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
        if feed.mode == "replay":
            self.status.replay_label = feed.label()
        self.selected: str | None = None
        self.history: list[RunRecord] = []
        self.summaries = Summaries()
        self.run_gen = 0
        self.interrupted = False
        self.last_message = ""
        self._prev_store: SessionStore | None = None
        self._last_finished: SessionStore | None = None
        self._seen_version = -1
        self._dirty = True
        self._last_table = 0.0
        self._last_progress = 0.0
        self._feed_worker: Worker | None = None
        self._sigs: dict[str, tuple] = {}
        self._user_selected = False
        self._watch: ServerWatch | None = None

    # ------------------------------------------------------------------ layout
    @property
    def token_text(self) -> dict[int, str] | None:
        """Given text, else what the server sent with scored samples (untrusted either way)."""
        if self._token_text:
            return self._token_text
        return self.store.token_text if self.store is not None else None

    def compose(self) -> ComposeResult:
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
        yield Footer()

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
        and Textual would otherwise parse `[...]` as markup (and crash on a stray `[/]`)."""
        super().notify(
            escape_controls(message, 300),
            title=escape_controls(title, 80),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(themes.VARIABLE_DEFAULTS)

    def on_mount(self) -> None:
        if self.read_only:
            self.notify("read-only: re-run and screenshots are off", timeout=4)
        for note in self._startup_notes:
            self.notify(escape_controls(note), severity="warning", timeout=8)
        self.theme_changed_signal.subscribe(self, lambda _t: self.refresh_views(force=True))
        self.set_interval(1 / REFRESH_HZ, self._tick)
        self.query_one(Heatmap).focus()
        if self.watching:
            self._watch = ServerWatch(self.feed.servers, getattr(self.feed.cfg, "api_key", None))
            self.set_interval(POLL_INTERVAL_S, self._watch_tick)
        self.start_feed()
        if self._dumps_result is not None:
            self.push_screen(DumpsScreen(self._dumps_result))

    async def on_unmount(self) -> None:
        if self._watch is not None:
            await self._watch.aclose()

    # ------------------------------------------------------------------ feed (Sink)
    def start_feed(self) -> None:
        self._feed_worker = self.run_worker(
            self.feed.run(self), group="feed", exclusive=True, exit_on_error=False
        )

    def feed_start_run(self) -> SessionStore:
        self.run_gen += 1
        self.store = SessionStore()
        self.summaries.clear()
        self.status.running = True
        self.status.run_no = len(self.history) + 1
        self.status.message = "connecting to " + ", ".join(self.feed.servers)
        self._mark_dirty()
        return self.store

    def feed_event(self, ev: Event) -> None:
        self._dirty = True
        match ev:
            case HelperStarted():
                key = f"{ev.helper}@{ev.server}"
                # Follow the helper that is running, until the user picks one.
                if not self._user_selected or self.selected not in self.store.helpers:
                    self.selected = key
            case RunStarted():
                self.status.message = None
            case Problem() if self.feed.mode == "live":
                severity = "error" if ev.fatal else "warning"
                text = escape_controls(f"{ev.source}: {ev.message}", 300)
                self.notify(text, severity=severity, timeout=8 if ev.fatal else 5)
            case RunFinished() if not self._user_selected:
                # Land on what needs looking at: the first helper that did not pass.
                for key, st in self.store.helpers.items():
                    if st.summary is not None and st.summary.status not in (None, "pass"):
                        self.selected = key
                        break

    def feed_end_run(self, store: SessionStore, *, counted: bool, recording: str | None) -> None:
        self.status.running = False
        self.status.recording = recording or self.status.recording
        if counted and store.run is not None:
            identical, difference = None, None
            if self._prev_store is not None and store.finished and self._prev_store.finished:
                eq = rerun_equality(self._prev_store, store)
                identical, difference = eq["identical"], describe_rerun(eq)
                self.notify(
                    escape_controls(
                        f"run {len(self.history) + 1} vs the one before: {difference}", 300
                    ),
                    timeout=6,
                )
            self.history.append(
                record_of(len(self.history) + 1, store, identical, recording, difference)
            )
            self._prev_store = store
            self._last_finished = store
            if self._watch is not None:
                self._watch.remember(store.run.servers)
        elif store.run is not None:
            self._last_finished = store
        self._mark_dirty()

    async def confirm_flush(self, client) -> bool:
        """Before the first flush of a server (the runner asks): ask the user when the server
        may be shared, once per server per session; False cancels the run."""
        url = client.url
        if url in self.flush_settled or getattr(
            getattr(self.feed, "cfg", None), "yes_flush", False
        ):
            return True
        reason = await reason_to_ask(client, self._loopback)
        if reason is not None:
            answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            self.push_screen(
                ConfirmFlush(url, reason, read_only=self.read_only),
                callback=lambda yes: answer.done() or answer.set_result(bool(yes)),
            )
            if not await answer:
                self.last_message = f"run cancelled: {url} was not flushed"
                return False
        self.flush_settled.add(url)
        return True

    def feed_retry(self, seconds: int | None, attempt: int) -> None:
        self.status.retry_in = seconds
        self.status.retry_attempt = attempt
        self.status.running = seconds is None
        self._mark_dirty()

    def feed_error(self, message: str) -> None:
        self.last_message = message
        self.notify(escape_controls(message, 300), severity="error", timeout=10)

    # ------------------------------------------------------------------ redraw
    def _mark_dirty(self) -> None:
        self._dirty = True

    def _elapsed(self) -> dict[str, float]:
        """Each helper's seconds on the store's one clock (a replay's is the recording's)."""
        store = self.store
        return {k: st.elapsed for k, st in store.helpers.items()} if store else {}

    def _tick(self) -> None:
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
            # the timer can fire while the app tears its widgets down on exit
            self._dirty = True

    def refresh_views(self, *, table: bool = True, force: bool = False) -> None:
        """Redraw the panels whose inputs changed (also called by tests and benches).

        Each panel is redrawn only when its signature changes: a Static update costs a
        screen layout, and most panels do not change while tokens stream in.
        """
        store = self.store
        vars_ = self.theme_variables
        if force:
            self._sigs.clear()
        if store is not None and self.selected not in store.helpers and store.helpers:
            self.selected = next(iter(store.helpers))
        helpers = store.helpers if store is not None else {}
        theme = self.theme
        run_sig = (self.run_gen, theme, store.run is not None if store else None)
        status = dataclasses.astuple(self.status)
        problems = len(store.problems) if store else 0
        verdict = store.finished.verdict if store and store.finished else None
        if self._changed("title", (run_sig, status, problems, verdict, self.size)):
            self.query_one(TitleBar).show(store, self.status, vars_)
        if self._changed("servers", (run_sig, status)):
            self.query_one(ServersPanel).show(store, self.status, vars_)
        self._refresh_progress()
        st = self.selected_state()
        summary = self.summaries.get(st) if st is not None else None
        if self._changed("counters", (run_sig, self.selected, id(summary))):
            self.query_one(Counters).show(st, summary, vars_)
        if self._changed(
            "history", (theme, len(self.history), self.selected, self.watching, self.status.watch)
        ):
            self.query_one(HistoryPanel).show(self.history, self.selected, vars_, self.watching)
        hm = self.query_one(Heatmap)
        hm.show(st, self.run_gen)
        self.query_one(HeatmapPanel).border_title = self._heat_title(st)
        if table:
            self._last_table = time.monotonic()
            self.query_one(SampleTable).show(st, self.run_gen, hm.palette)
        else:
            self._dirty = True  # the table catches up on a later tick
        finished = tuple(id(h.summary) for h in helpers.values())
        if self._changed("diagnosis", (run_sig, finished)):
            diags = diagnose(store) if helpers else []
            multi = len({h.server for h in helpers.values()}) > 1
            pending = 0
            if store is not None and store.finished is None and store.run is not None:
                configured = [h for h in store.run.config.get("helpers", []) if same_engine(h)]
                done = {h.helper for h in helpers.values() if h.summary is not None}
                pending = len(self.feed.servers) * len(configured) - len(done)
            self.query_one(DiagnosisBar).show(diags, multi, vars_, max(0, pending))

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
            self.query_one(HelperProgress).show(
                store, self.selected, self.summaries, elapsed, self.theme_variables
            )

    def _heat_title(self, st: HelperState | None) -> Text:
        # A Text, not a str: Textual parses a str title as markup (helper and server names
        # come from a recording or a server).
        if st is None:
            return Text("k3 heatmap")
        multi = self.store is not None and len({s.server for s in self.store.helpers.values()}) > 1
        where = f" @ {st.server}" if multi else ""
        return safe(f"k3 heatmap · {st.helper}{where} · rows = samples, columns = positions")

    DASHBOARD_ONLY = frozenset(
        {"cycle_helper", "first_divergence", "rerun", "problems", "diagnosis", "compare"}
    )

    # what a reviewer of a served dashboard (`kltui web --read-only`) must not do
    ACTS = frozenset({"rerun", "save_svg", "screenshot"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.read_only and action in self.ACTS:
            return False
        # Dashboard keys do nothing useful on top of a drill-down or help: hide them there.
        if action in self.DASHBOARD_ONLY and len(self.screen_stack) > 1:
            return False
        return True

    # ------------------------------------------------------------------ selection
    def helper_keys(self) -> list[str]:
        return list(self.store.helpers) if self.store else []

    def selected_state(self) -> HelperState | None:
        if self.store is None or self.selected is None:
            return None
        return self.store.helpers.get(self.selected)

    def select_helper(self, key: str) -> None:
        if self.store is None or key not in self.store.helpers:
            return
        self._user_selected = True
        self.selected = key
        self.refresh_views()

    def action_cycle_helper(self, step: int) -> None:
        keys = self.helper_keys()
        if not keys:
            return
        i = keys.index(self.selected) if self.selected in keys else -step
        self.select_helper(keys[(i + step) % len(keys)])

    def on_helper_progress_selected(self, msg: HelperProgress.Selected) -> None:
        self.select_helper(msg.key)

    def set_theme(self, name: str) -> None:
        self.theme = name

    # ------------------------------------------------------------------ drill-down
    def open_sample(self, sample: int, position: int | None = None) -> None:
        st = self.selected_state()
        if st is None:
            return
        if isinstance(self.screen, DrillDown):
            self.pop_screen()
        if sample not in st.book.samples:
            why = st.skipped.get(sample)
            text = (
                f"sample {sample} was skipped: {why}"
                if why
                else (f"sample {sample} is not scored yet")
            )
            self.last_message = text
            self.notify(escape_controls(text), timeout=3)
            return
        hm = self.query_one(Heatmap)
        self.push_screen(DrillDown(st, sample, position, self.token_text, hm.palette))

    def on_heatmap_open(self, msg: Heatmap.Open) -> None:
        self.open_sample(msg.sample, msg.position)

    def on_data_table_row_selected(self, msg: DataTable.RowSelected) -> None:
        if isinstance(msg.data_table, SampleTable) and msg.row_key.value is not None:
            self.open_sample(int(msg.row_key.value))

    def action_first_divergence(self) -> None:
        st = self.selected_state()
        summary = self.summaries.get(st, force=True) if st is not None else None
        fd = summary.first_divergence if summary else None
        if not fd:
            text = (
                "no divergence: every scored token is bit-identical"
                if summary
                else ("nothing scored yet")
            )
            self.last_message = text
            self.notify(text, timeout=3)
            return
        hm = self.query_one(Heatmap)
        hm.move_to(int(fd["sample"]), int(fd["position"]))
        hm.focus()
        self.last_message = f"first divergence: sample {fd['sample']} @ {fd['position']}"

    # ------------------------------------------------------------------ actions
    def action_help(self) -> None:
        self.push_screen(HelpScreen(binding_groups(), self.user_keymap))

    def action_problems(self) -> None:
        self.push_screen(ProblemsScreen(self.store.problems if self.store else []))

    def action_diagnosis(self) -> None:
        diags = diagnose(self.store) if self.store is not None and self.store.helpers else []
        self.push_screen(DiagnosisScreen(diags, self.theme_variables))

    def action_compare(self) -> None:
        pairs = cross_server(self.store) if self.store is not None else []
        if not pairs:
            self.last_message = "one server in this run: nothing to compare (--server A --server B)"
            self.notify(self.last_message, timeout=3)
            return
        self.push_screen(CompareScreen(pairs, self.theme_variables))

    def open_dumps(self, server: str) -> None:
        """Where the diagnosis hands over to the dumper drill-down (`kltui dumps`) for `server`:
        the hooks are probed first; without them the launch settings and the command are shown,
        with them the capture runs (server idle only) and the module table opens."""
        from kltui.session.diagnosis import dumps_command
        from kltui.tui.screens.dumps_run import DumpsRequest, DumpsRunScreen

        if self.read_only:
            self._say("read-only: the dumper drill-down drives the server, so it is off")
            return
        if self.status.running:
            self._say("a run is in progress: the dumper drill-down needs the server idle")
            return
        dump_dir = self.dump_dir()
        cfg = getattr(self.feed, "cfg", None)
        self.push_screen(
            DumpsRunScreen(
                DumpsRequest(
                    server=server,
                    dump_dir=dump_dir,
                    command=dumps_command(server, str(dump_dir)),
                    api_key=getattr(cfg, "api_key", None),
                    timeout=getattr(cfg, "request_timeout", 600.0),
                )
            )
        )

    def dump_dir(self) -> Path:
        """--dump-dir / `dump_dir:` in the config, else `dumps` in the runs folder."""
        from kltui.session.recording import default_runs_dir

        folder = self._dump_dir or (default_runs_dir() / "dumps")
        return Path(folder).expanduser().resolve()

    def _say(self, text: str) -> None:
        self.last_message = text
        self.notify(text, timeout=5)

    def action_save_svg(self) -> None:
        if self.read_only:  # the command palette calls actions directly
            return
        st = self.selected_state()
        name = st.helper if st else "dashboard"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = Path(self.screenshot_dir or os.getcwd())
        path = folder / f"kltui-{name}-{stamp}.svg"
        n = 2
        while path.exists():
            path = folder / f"kltui-{name}-{stamp}-{n}.svg"
            n += 1
        try:
            saved = self.save_screenshot(filename=path.name, path=str(folder))
        except OSError as e:
            self.notify(f"screenshot not saved: {e.strerror}", severity="error")
            return
        self.last_message = f"screenshot saved: {saved}"
        self.notify(escape_controls(self.last_message), timeout=5)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        # The palette's builtin screenshot entry names the file after the title; ours is
        # named after the helper, so both routes agree.
        self.action_save_svg()

    async def action_rerun(self) -> None:
        if self.read_only:
            return
        worker = self._feed_worker
        if worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING):
            if self.status.running:
                self.notify("restarting: the run in progress is kept as interrupted", timeout=3)
            worker.cancel()
            await _wait(worker)
        if self.feed.mode == "replay":
            self.history.clear()
            self._prev_store = None
        self.status.retry_in = None
        self.start_feed()

    async def action_quit(self) -> None:
        worker = self._feed_worker
        if worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING):
            measuring = self.status.running and self.status.retry_in is None
            if self.feed.mode == "replay":
                measuring = not getattr(self.feed, "finished", True)
            self.interrupted = self.interrupted or measuring
            worker.cancel()
            await _wait(worker)
        self.exit(self.exit_code())

    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        store = self._last_finished or self.store
        if store is None or store.finished is None:
            return EXIT_SERVER
        return exit_code(store.finished.verdict)

    # ------------------------------------------------------------------ watch
    def _watch_tick(self) -> None:
        if self._watch is None or self.status.running or self.status.retry_in is not None:
            return
        self._poll_servers()

    @work(group="watch", exclusive=True, exit_on_error=False)
    async def _poll_servers(self) -> None:
        changed, down = await self._watch.poll()
        if self.status.running:
            return
        if changed:
            self.status.watch = "server restarted: re-running"
            self.notify("server restarted: re-running", timeout=3)
            self._dirty = True
            await self.action_rerun()
            return
        self.status.watch = (
            f"{len(down)} server(s) down, waiting" if down else "watching for a restart"
        )
        self._dirty = True


async def _wait(worker: Worker) -> None:
    try:
        await worker.wait()
    except Exception:  # noqa: BLE001 - a cancelled or failed worker is what we asked for
        pass


def binding_groups() -> list[tuple[str, list[Binding]]]:
    from kltui.tui.screens.drilldown import DrillDown as _Drill

    def own(cls) -> list[Binding]:
        return [b for b in cls.BINDINGS if isinstance(b, Binding)]

    return [
        ("Dashboard", own(KltuiApp)),
        ("Heatmap", own(Heatmap)),
        ("Sample table", own(SampleTable) + [Binding("enter", "open", "Drill down")]),
        ("Drill-down", own(_Drill)),
        ("Diagnosis", own(DiagnosisScreen)),
        ("Servers compared", own(CompareScreen)),
        (
            "Anywhere",
            [
                Binding("ctrl+p", "command_palette", "Command palette"),
                Binding("tab", "focus_next", "Next panel"),
            ],
        ),
    ]


def all_binding_ids() -> set[str]:
    return {b.id for _, group in binding_groups() for b in group if b.id}


# ---------------------------------------------------------------------- entry points
def run_app(
    cfg: RunConfig,
    *,
    record: str | None,
    json_path: str | None,
    theme: str | None,
    watch: bool,
    read_only: bool = False,
    dumps_result: dict | None = None,
) -> int:
    """`kltui` / `kltui demo`: the live dashboard. Returns the process exit code."""
    app = KltuiApp(
        LiveFeed(cfg, record),
        theme=theme or cfg.theme,
        keymap=cfg.keymap,
        watch=watch,
        read_only=read_only,
        dump_dir=cfg.dump_dir,
        dumps_result=dumps_result,
    )
    app.run()
    store = app._last_finished or app.store
    if json_path and store is not None and store.run is not None:
        from kltui.outputs.reports.common import write_json

        write_json(store, json_path)
    for rec in app.history:
        if rec.recording:
            print(f"recording: {rec.recording}", file=sys.stderr)
    return app.exit_code()


def run_replay(
    path: str,
    *,
    speed: float | None,
    instant: bool,
    theme: str | None,
    read_only: bool = False,
) -> int:
    """`kltui replay FILE`: the same dashboard fed from a recording."""
    recording = read_recording(path)
    app = KltuiApp(
        ReplayFeed(recording, speed=speed, instant=instant), theme=theme, read_only=read_only
    )
    app.run()
    return app.exit_code()


class DumpsViewer(App[int]):
    """`kltui --dumps FILE.json` without a server: the saved module table alone."""

    TITLE = "kltui dumps"

    def __init__(self, result: dict, theme: str | None = None) -> None:
        super().__init__()
        self.result = result
        loaded = themes.load_themes()
        for t in loaded.themes:
            self.register_theme(t)
        if (theme or themes.DEFAULT_THEME) in self.available_themes:
            self.theme = theme or themes.DEFAULT_THEME

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(themes.VARIABLE_DEFAULTS)

    def on_mount(self) -> None:
        self.push_screen(DumpsScreen(self.result))

    async def action_pop_screen(self) -> None:
        # closing the only screen there is quits
        self.exit(0)


def run_dumps_viewer(result: dict, theme: str | None = None) -> int:
    app = DumpsViewer(result, theme)
    app.run()
    return app.return_code or 0
