"""The dashboard's fixed toasts (`words/screen_toasts.py`), one golden line each; the TUI
tests assert the toast shown (or `last_message`) is this function's output."""

from __future__ import annotations

from kltui.words.screen_toasts import Notice, notice

GOLDEN = {
    Notice.NO_PROBLEMS: "no problems",
    Notice.NO_MULTITURN: "no multiturn turns in this run (--helpers multiturn)",
    Notice.ONE_SERVER: "one server in this run: nothing to compare (--server A --server B)",
    Notice.DUMPS_READ_ONLY: "read-only: the dumper drill-down drives the server, so it is off",
    Notice.DUMPS_BUSY: "a run is in progress: the dumper drill-down needs the server idle",
    Notice.NOT_A_SWEEP: "a: the sweep matrix, in a dashboard opened by kltui ablate",
    Notice.NOT_A_MONITOR: "m: the monitor's probes, in a dashboard opened by kltui monitor",
    Notice.SWEEP_NO_RERUN: "a sweep is not re-run from the TUI: run kltui ablate again",
    Notice.MONITOR_NO_RERUN: "the monitor probes every --every on its own: r is off here",
}


def test_every_toast():
    assert set(GOLDEN) == set(Notice)
    for kind, words in GOLDEN.items():
        assert notice(kind) == words, kind
