"""The dashboard's fixed toasts in words: a key that has nothing to open in this run, or is
off here, says so and why (`tui/actions.py`, `tui/sweep_actions.py`, `tui/monitor_actions.py`
show them and keep the last as `last_message`)."""

from __future__ import annotations

from enum import StrEnum


class Notice(StrEnum):
    """Which fixed toast."""

    NO_PROBLEMS = "no_problems"  # e: the run had none
    NO_MULTITURN = "no_multiturn"  # t: no multiturn helper ran
    ONE_SERVER = "one_server"  # c: nothing to compare
    DUMPS_READ_ONLY = "dumps_read_only"  # the dumper drill-down in a read-only view
    DUMPS_BUSY = "dumps_busy"  # the dumper drill-down while a run goes on
    NOT_A_SWEEP = "not_a_sweep"  # a outside kltui ablate
    NOT_A_MONITOR = "not_a_monitor"  # m outside kltui monitor
    SWEEP_NO_RERUN = "sweep_no_rerun"  # r in a sweep
    MONITOR_NO_RERUN = "monitor_no_rerun"  # r under a monitor


NOTICE_WORDS = {
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


def notice(kind: Notice) -> str:
    """The toast of `kind`."""
    return NOTICE_WORDS[kind]
