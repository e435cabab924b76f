"""`kltui FILE` / `kltui import FILE --tui`: the dashboard on an imported file."""

from __future__ import annotations

from kltui.importer.reader import Source
from kltui.rl.stream import ImportOptions
from kltui.tui.app import KltuiApp
from kltui.tui.import_feed import ImportFeed
from kltui.tui.launch import print_screenshots


def run_import_app(
    path: str,
    opts: ImportOptions,
    source: Source | None = None,
    *,
    theme: str | None = None,
    screenshot_dir: str | None = None,
) -> int:
    """The dashboard fed from the file; its exit code (the gate's verdict)."""
    # not read-only: nothing here talks to a server, and screenshots (s) are wanted
    app = KltuiApp(ImportFeed(path, opts, source), theme=theme, screenshot_dir=screenshot_dir)
    app.run()
    print_screenshots(app)
    return app.exit_code()
