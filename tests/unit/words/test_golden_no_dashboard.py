"""The note when the dashboard does not open (`words/no_dashboard.py`), one golden per
`NoDashboard` kind; tests/unit/cli and tests/integration/test_demo.py assert when it is said."""

from __future__ import annotations

from kltui.words.no_dashboard import NoDashboard, no_dashboard_note


def test_a_report_to_stdout():
    assert no_dashboard_note("kltui demo", NoDashboard.REPORT_TO_STDOUT) == (
        "kltui demo: a report goes to stdout: printing the results instead of the dashboard"
    )


def test_not_a_terminal():
    assert no_dashboard_note("kltui", NoDashboard.NOT_A_TERMINAL) == (
        "kltui: stdin or stdout is not a terminal: printing the results instead of the dashboard"
    )
