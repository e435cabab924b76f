"""Entry points the CLI calls: run_app (live), run_replay, run_sweep_app (`kltui ablate`'s
matrix), run_monitor_app (`kltui monitor`'s probes), run_dumps_viewer (a saved dumps result without a server), and what is printed on the
terminal after the app quits."""

from __future__ import annotations

import sys

from textual.app import App

from kltui.errors import EXIT_SERVER
from kltui.run.config import RunConfig
from kltui.session.recording import read_recording
from kltui.tui import themes
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed, ReplayFeed
from kltui.tui.monitor_feed import MonitorFeed
from kltui.tui.screens.dumps import DumpsScreen
from kltui.tui.sweep_feed import SweepFeed


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
    screenshot_dir: str | None = None,
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
        screenshot_dir=screenshot_dir,
    )
    app.run()
    store = app._last_finished or app.store
    for line in exit_lines(app):
        print(line, file=sys.stderr)
    if json_path and store is not None and store.run is not None:
        from kltui.outputs.reports.common import write_json

        write_json(store, json_path)
    for rec in app.history:
        if rec.recording:
            print(f"recording: {rec.recording}", file=sys.stderr)
    print_screenshots(app)
    return app.exit_code()


def run_sweep_app(
    feed: SweepFeed,
    *,
    theme: str | None,
    screenshot_dir: str | None = None,
    read_only: bool = False,
) -> None:
    """`kltui ablate` on a terminal (and `--replay FOLDER`): the matrix of configurations over
    each configuration's dashboard; the sweep's result stays in `feed.sweep`."""
    app = KltuiApp(feed, theme=theme, screenshot_dir=screenshot_dir, read_only=read_only)
    app.run()
    print_screenshots(app)


def run_monitor_app(feed: MonitorFeed, *, theme: str | None, read_only: bool = False) -> int:
    """`kltui monitor` on a terminal: the probes over each probe's dashboard. Quitting stops
    the monitor cleanly (exit 0); after `--probes N`, the last probe's exit code."""
    app = KltuiApp(feed, theme=theme, read_only=read_only)
    app.run()
    print_screenshots(app)
    last = feed.monitor.last
    done = feed.monitor.probes is not None and feed.monitor.count >= feed.monitor.probes
    return last.exit_code if last is not None and done and not feed.monitor.stopping else 0


def print_screenshots(app: KltuiApp) -> None:
    """Print the path of every screenshot the app saved."""
    for path in app.screenshots:
        print(f"screenshot: {path}", file=sys.stderr)


def exit_lines(app: KltuiApp) -> list[str]:
    """What went wrong, for the terminal once the dashboard is gone: the run's errors as
    `kltui check` prints them, when it exits 3 (no server answered) or the run ended in error."""
    store = app._last_finished or app.store
    errored = store is not None and store.finished is not None and store.finished.verdict == "error"
    if app.exit_code() != EXIT_SERVER and not errored:
        return []
    return app.error_lines(store)


def run_replay(
    path: str,
    *,
    speed: float | None,
    instant: bool,
    theme: str | None,
    read_only: bool = False,
    screenshot_dir: str | None = None,
) -> int:
    """`kltui replay FILE`: the same dashboard fed from a recording."""
    recording = read_recording(path)
    app = KltuiApp(
        ReplayFeed(recording, speed=speed, instant=instant),
        theme=theme,
        read_only=read_only,
        screenshot_dir=screenshot_dir,
    )
    app.run()
    print_screenshots(app)
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
        """kltui's theme variables, so the dumps screen's CSS resolves."""
        return dict(themes.VARIABLE_DEFAULTS)

    def on_mount(self) -> None:
        """Show the dumps screen."""
        self.push_screen(DumpsScreen(self.result))

    async def action_pop_screen(self) -> None:
        """Quit: the dumps screen is the only screen."""
        # closing the only screen there is quits
        self.exit(0)


def run_dumps_viewer(result: dict, theme: str | None = None) -> int:
    """Show a saved dumps analysis in the terminal; its exit code."""
    app = DumpsViewer(result, theme)
    app.run()
    return app.return_code or 0
