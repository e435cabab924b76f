"""The note on stderr when a command that has a dashboard prints to the console instead
(`cli/terminal.py` decides why: `NoDashboard`)."""

from __future__ import annotations

from enum import StrEnum


class NoDashboard(StrEnum):
    """Why the dashboard does not open (--headless asked for it: no note)."""

    REPORT_TO_STDOUT = "report to stdout"  # --json/--md/--junit/--html -
    NOT_A_TERMINAL = "not a terminal"  # stdin or stdout is a file, a pipe or CI


_WHY = {
    NoDashboard.REPORT_TO_STDOUT: "a report goes to stdout",
    NoDashboard.NOT_A_TERMINAL: "stdin or stdout is not a terminal",
}


def no_dashboard_note(command: str, why: NoDashboard) -> str:
    """The note, for `command` as the user typed it ("kltui demo")."""
    return f"{command}: {_WHY[why]}: printing the results instead of the dashboard"
