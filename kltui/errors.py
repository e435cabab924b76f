"""What kltui's exit codes mean, and the one error every command turns into exit code 2.

Documented contract (README, `kltui --help`): 0 pass, 1 fail, 2 usage or bad input,
3 server unreachable or error, 130 interrupted. A run's verdict maps onto them here and nowhere
else, so `kltui check`, the TUI and `kltui report` cannot disagree."""

from __future__ import annotations

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_SERVER = 3
EXIT_INTERRUPTED = 130

VERDICT_EXIT = {
    "pass": EXIT_PASS,
    "fail": EXIT_FAIL,
    "error": EXIT_SERVER,
    "interrupted": EXIT_INTERRUPTED,
}


class UsageError(Exception):
    """Bad command line, config or input file: exit code 2."""


def exit_code(verdict: str | None) -> int:
    """The exit code for a run's verdict; no verdict (the run never finished) is an error."""
    return VERDICT_EXIT.get(verdict or "error", EXIT_SERVER)
