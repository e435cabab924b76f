"""The Rich console every command-line view prints to (`kltui check`, `replay --headless`,
`kltui dumps`, `kltui probe-ops`)."""

from __future__ import annotations

import sys

from rich.console import Console


def make_console() -> Console:
    """A console for stdout that keeps server text as typed and does not wrap in CI logs."""
    # CI logs are not terminals; Rich would wrap the results table at 80 columns there.
    # emoji=False: a server string like ":warning:" must print as typed, not as a glyph.
    return Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 160)


def error_console(console: Console) -> Console:
    """Where a view prints an error: stderr when `console` prints to stdout (the command line,
    so a script reading stdout gets the results and the verdict line, and its log the errors),
    else `console` itself (a file or buffer its caller collects)."""
    if console.file is not sys.stdout:
        return console
    return Console(
        stderr=True, highlight=False, emoji=False, width=None if sys.stderr.isatty() else 160
    )
