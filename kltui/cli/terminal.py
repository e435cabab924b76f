"""Whether a command draws the dashboard or prints to the console: the one rule every
command that has both (`kltui`, `demo`, `replay`, `ablate`) follows. A full-screen app whose
output goes to a file, a pipe or a CI log would draw escape codes into it and wait for a key
that never comes; there the console run, its verdict line and its exit code are what is
wanted."""

from __future__ import annotations

import argparse
import os
import sys

from kltui.words.no_dashboard import NoDashboard, no_dashboard_note

REPORT_ARGS = ("json", "md", "junit", "html")


def web_driver() -> bool:
    """Run by textual-serve (`kltui web`), which picks Textual's web driver by this variable."""
    return "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")


def use_tui(args: argparse.Namespace) -> bool:
    """The TUI, unless --headless, a report goes to stdout, or stdin or stdout is not a
    terminal (CI, a pipe, a file: the console)."""
    if getattr(args, "headless", False):
        return False
    if "-" in (getattr(args, name, None) for name in REPORT_ARGS):
        return False
    if web_driver():
        return True  # a browser tab of `kltui web`: its pipes are the web driver's
    return sys.stdin.isatty() and sys.stdout.isatty()


def headless_note(command: str, args: argparse.Namespace) -> None:
    """Say on stderr why the dashboard does not open, when --headless was not asked for."""
    if getattr(args, "headless", False):
        return
    why = (
        NoDashboard.REPORT_TO_STDOUT
        if "-" in (getattr(args, name, None) for name in REPORT_ARGS)
        else NoDashboard.NOT_A_TERMINAL
    )
    print(no_dashboard_note(command, why), file=sys.stderr)
