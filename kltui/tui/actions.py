"""What the dashboard's keys do (the bindings are KltuiApp.BINDINGS): helper selection,
drill-down, screens, screenshots, re-run, quit and the exit code, and --watch's re-run.

A mixin of KltuiApp (kltui.tui.app), which holds the state it acts on.
"""

from __future__ import annotations

import time
from pathlib import Path

from textual import work
from textual.widgets import DataTable
from textual.worker import Worker, WorkerState

from kltui.errors import session_exit
from kltui.outputs.reports.multiturn_json import reading_of
from kltui.readings.cross_server import cross_server
from kltui.readings.diagnosis import diagnose
from kltui.readings.fleet import fleet
from kltui.run.reopen import NotFetched
from kltui.session.events import Problem
from kltui.session.store import HelperState
from kltui.tui.bindings import binding_groups
from kltui.tui.feeds import LiveFeed
from kltui.tui.host import DashboardHost
from kltui.tui.screens.branches import BranchTree
from kltui.tui.screens.compare import CompareScreen
from kltui.tui.screens.diagnosis import DiagnosisScreen
from kltui.tui.screens.drilldown import DrillDown
from kltui.tui.screens.fleet import FleetScreen
from kltui.tui.screens.help import HelpScreen
from kltui.tui.screens.problems import ProblemsScreen
from kltui.tui.widgets.heatmap import Heatmap
from kltui.tui.widgets.progress import HelperProgress
from kltui.tui.widgets.samples import SampleTable
from kltui.untrusted import escape_controls
from kltui.words.screen_drill import FetchNote, fetch_note
from kltui.words.screen_toasts import Notice, notice

# refreshes a screenshot waits for the toasts it clears to leave the screen
TOAST_WAIT_REFRESHES = 10


class DashboardActions(DashboardHost):
    """What the dashboard's keys do (a mixin of KltuiApp; its host's part: DashboardHost)."""

    DASHBOARD_ONLY = frozenset(
        {
            "cycle_helper",
            "first_divergence",
            "rerun",
            "problems",
            "diagnosis",
            "compare",
            "branches",
        }
    )

    # what a reviewer of a served dashboard (`kltui web --read-only`) must not do
    ACTS = frozenset({"rerun", "save_svg", "screenshot"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Whether an action is offered now (off when read-only or under another screen)."""
        if self.read_only and action in self.ACTS:
            return False
        # Dashboard keys do nothing useful on top of a drill-down or help: hide them there.
        if action in self.DASHBOARD_ONLY and len(self.screen_stack) > 1:
            return False
        if action == "problems" and not (self.store is not None and self.store.problems):
            return False  # nothing to list: `e` stays out of the footer
        return True

    # ------------------------------------------------------------------ selection
    def helper_keys(self) -> list[str]:
        """The keys of every helper in the run shown, in the helpers panel's order."""
        return [st.key for st in self.store.by_server()] if self.store else []

    def selected_state(self) -> HelperState | None:
        """The state of the selected helper, or None."""
        if self.store is None or self.selected is None:
            return None
        return self.store.helpers.get(self.selected)

    def select_helper(self, key: str) -> None:
        """Select a helper by its key (the user's choice sticks)."""
        if self.store is None or key not in self.store.helpers:
            return
        self._user_selected = True
        self.selected = key
        self.refresh_views()

    def action_cycle_helper(self, step: int) -> None:
        """Select the next (or previous) helper."""
        keys = self.helper_keys()
        if not keys:
            return
        i = keys.index(self.selected) if self.selected in keys else -step
        self.select_helper(keys[(i + step) % len(keys)])

    def on_helper_progress_selected(self, msg: HelperProgress.Selected) -> None:
        """Select the helper whose progress row was clicked."""
        self.select_helper(msg.key)

    def set_theme(self, name: str) -> None:
        """Switch to a theme by name."""
        self.theme = name

    # ------------------------------------------------------------------ drill-down
    def open_sample(self, sample: int, position: int | None = None) -> None:
        """Open the drill-down of a sample of the selected helper, at a position."""
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

    def fetch_opened_extras(self, drill: DrillDown, *, asked: bool) -> None:
        """Top-k and text for a sample opened without them: one bounded request once the run
        has finished (never during the gate); a replay asks its recorded server only when the
        user presses x (`asked`); what cannot be fetched says why."""
        replay = self.feed.mode == "replay"
        if replay and not asked:
            drill.note(fetch_note(FetchNote.REPLAY))
        elif self.read_only:
            drill.note(fetch_note(FetchNote.READ_ONLY))
        elif self.status.running:
            drill.note(fetch_note(FetchNote.RUNNING))
        elif isinstance(self.feed, LiveFeed) and self.feed.cfg.top_k <= 0:
            drill.note(fetch_note(FetchNote.TOP_K_OFF))
        else:
            where = "the recorded server" if replay else drill.state.server
            drill.note(fetch_note(FetchNote.FETCHING, where))
            self._fetch_opened(drill)

    @work(group="extras", exclusive=True, exit_on_error=False)
    async def _fetch_opened(self, drill: DrillDown) -> None:
        store, st = self.store, drill.state
        if store is None:
            return
        around = drill.start_position
        if around is None:
            around = st.book.samples[drill.sample].metrics.first_divergence
        replay = "replay: " if self.feed.mode == "replay" else ""
        try:
            events = await self.feed.fetch_opened(store, st, drill.sample, around)
        except NotFetched as e:
            drill.note(f"{replay}top-k and token text not fetched: {e}")
            return
        if store is not self.store:
            return  # a new run started meanwhile: its store, not this one
        for ev in events:
            store.apply(ev)
        self._dirty = True
        problems = [ev.message for ev in events if isinstance(ev, Problem)]
        if problems:
            drill.note(problems[0])
        elif not events:
            drill.note("nothing to fetch for this sample")
        else:
            drill.note("")
        if drill.is_mounted:
            drill.reload()

    def on_heatmap_open(self, msg: Heatmap.Open) -> None:
        """Open the sample of the heatmap cell that was chosen."""
        self.open_sample(msg.sample, msg.position)

    def on_data_table_row_selected(self, msg: DataTable.RowSelected) -> None:
        """Open the sample of the table row that was chosen."""
        if isinstance(msg.data_table, SampleTable) and msg.row_key.value is not None:
            self.open_sample(int(msg.row_key.value))

    def action_first_divergence(self) -> None:
        """Open the selected helper's first divergence."""
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
        """Show the help screen."""
        self.push_screen(HelpScreen(binding_groups(), self.user_keymap))

    def action_problems(self) -> None:
        """Show the problems screen."""
        self.push_screen(ProblemsScreen(self.store.problems if self.store else []))

    def key_e(self) -> None:
        """`e` while its binding is off (check_action keeps it out of the footer when there is
        nothing to list): say so, instead of a key press that does nothing visible."""
        if len(self.screen_stack) == 1 and not (self.store is not None and self.store.problems):
            self.notify(notice(Notice.NO_PROBLEMS), timeout=3)

    def action_diagnosis(self) -> None:
        """Show the diagnosis screen."""
        diags = diagnose(self.store) if self.store is not None and self.store.helpers else []
        self.push_screen(DiagnosisScreen(diags))

    def action_branches(self) -> None:
        """The multiturn branch tree of the selected helper (else of the first multiturn one);
        Enter on a turn opens its drill-down."""
        st = self.selected_state()
        if self.store is not None and (st is None or not st.places):
            st = next((s for s in self.store.helpers.values() if s.places), None)
            if st is not None:
                self.select_helper(st.key)
        reading = reading_of(self.store, st) if self.store is not None and st else None
        if st is None or reading is None:
            self.last_message = notice(Notice.NO_MULTITURN)
            self.notify(self.last_message, timeout=3)
            return
        palette = self.query_one(Heatmap).palette

        def opened(sample: int | None) -> None:
            if sample is not None:
                self.open_sample(sample)

        self.push_screen(BranchTree(st, reading, palette), opened)

    def action_compare(self) -> None:
        """Show the fleet of a --router run, or the server-vs-server comparison (or say there
        is one server)."""
        fl = fleet(self.store) if self.store is not None else None
        if fl is not None:
            self.push_screen(FleetScreen(fl, self.theme_variables), self.open_replica)
            return
        pairs = cross_server(self.store) if self.store is not None else []
        if not pairs:
            self.last_message = notice(Notice.ONE_SERVER)
            self.notify(self.last_message, timeout=3)
            return
        self.push_screen(CompareScreen(pairs, self.theme_variables))

    def open_replica(self, url: str | None) -> None:
        """The dashboard on one replica of a fleet: its first helper selected."""
        if url is None or self.store is None:
            return
        keys = [k for k, st in self.store.helpers.items() if st.server == url]
        if not keys:
            self._say(f"{url}: no helper ran on this replica (see e, Problems)")
            return
        self.select_helper(keys[0])
        self._say(f"replica {url}: [ and ] step through its helpers")

    def open_dumps(self, server: str) -> None:
        """Where the diagnosis hands over to the dumper drill-down (`kltui dumps`) for `server`:
        the hooks are probed first; without them the launch settings and the command are shown,
        with them the capture runs (server idle only) and the module table opens."""
        from kltui.tui.screens.dumps_run import DumpsRequest, DumpsRunScreen
        from kltui.words.advice import dumps_command

        if self.read_only:
            self._say(notice(Notice.DUMPS_READ_ONLY))
            return
        if self.status.running:
            self._say(notice(Notice.DUMPS_BUSY))
            return
        dump_dir = self.dump_dir()
        cfg = getattr(self.feed, "cfg", None)
        self.push_screen(
            DumpsRunScreen(
                DumpsRequest(
                    server=server,
                    dump_dir=dump_dir,
                    command=dumps_command(server, str(dump_dir)),
                    api_key=cfg.server_api_key() if cfg is not None else None,
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
        """Save a screenshot of the dashboard as SVG in the screenshot folder."""
        if self.read_only:  # the command palette calls actions directly
            return
        from kltui.session.recording import default_runs_dir

        st = self.selected_state()
        name = st.helper if st else "dashboard"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        # --screenshot-dir, else the runs folder, beside the recordings
        folder = Path(self.screenshot_dir or default_runs_dir()).expanduser().resolve()
        path = folder / f"kltui-{name}-{stamp}.svg"
        n = 2
        while path.exists():
            path = folder / f"kltui-{name}-{stamp}-{n}.svg"
            n += 1
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self._not_saved(folder, e)
            return
        # the dashboard, not the toasts over it (the last "screenshot saved" among them): taken
        # once they are gone from the screen
        self.clear_notifications()
        self.call_after_refresh(self._write_screenshot, path)

    def _write_screenshot(self, path: Path, waited: int = 0) -> None:
        from kltui.tui.svg import write_svg

        if self.screen.query("Toast") and waited < TOAST_WAIT_REFRESHES:
            self.call_after_refresh(self._write_screenshot, path, waited + 1)
            return
        try:
            saved = write_svg(self.export_screenshot(), path)
        except OSError as e:
            self._not_saved(path.parent, e)
            return
        self.screenshots.append(saved)  # printed on the terminal after quit
        self.last_message = f"screenshot saved: {saved}"
        self.notify(escape_controls(self.last_message), timeout=5)

    def _not_saved(self, folder: Path, e: OSError) -> None:
        self.last_message = f"screenshot not saved: {folder}: {e.strerror}"
        self.notify(escape_controls(self.last_message), severity="error")

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Save a screenshot (the palette's entry), named like the key's."""
        # The palette's builtin screenshot entry names the file after the title; ours is
        # named after the helper, so both routes agree.
        self.action_save_svg()

    async def action_rerun(self) -> None:
        """Start the run (or the replay) again."""
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
        self.status.retry_in = None
        self.start_feed()

    async def action_quit(self) -> None:
        """Quit, stopping the run (an unfinished one counts as interrupted)."""
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
        """The process exit code of this dashboard: the last finished run's verdict, 130 when a
        measurement was interrupted, 3 when no run finished."""
        store = self._last_finished or self.store
        verdicts = [] if store is None or store.finished is None else [store.finished.verdict]
        return session_exit(verdicts, interrupted=self.interrupted)

    # ------------------------------------------------------------------ watch
    def _watch_tick(self) -> None:
        if self._watch is None or self.status.running or self.status.retry_in is not None:
            return
        self._poll_servers()

    @work(group="watch", exclusive=True, exit_on_error=False)
    async def _poll_servers(self) -> None:
        if self._watch is None:  # the watch stopped while this poll was queued
            return
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
