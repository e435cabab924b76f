"""What kltui's exit codes mean, and the one error every command turns into exit code 2.

Documented contract (README, `kltui --help`): 0 pass, 1 fail, 2 usage or bad input,
3 server unreachable or error, 130 interrupted. A session's verdicts map onto them here and
nowhere else (`session_exit`, `exception_exit`), so `kltui check`, the TUI, `kltui web`,
`kltui dumps` and `kltui report` cannot disagree."""

from __future__ import annotations

from collections.abc import Iterable

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
    """Bad command line, config or input file: exit code 2. `finding`: the typed finding its
    message says, where there is one (a refused pair: `run/refusal.Refusal`)."""

    def __init__(self, *args: object, finding: object = None) -> None:
        super().__init__(*args)
        self.finding = finding


class FileLineError(UsageError):
    """An input file that cannot be used, named with its line when known (`PATH[:LINE]: ...`)."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")


def exit_code(verdict: str | None) -> int:
    """The exit code for one run's verdict; no verdict (the run never finished) is an error."""
    return VERDICT_EXIT.get(verdict or "error", EXIT_SERVER)


def passed_exit(passed: bool) -> int:
    """The exit code of a yes/no check (`kltui dumps`, `kltui probe-ops`): 0 passed, 1 failed."""
    return EXIT_PASS if passed else EXIT_FAIL


def session_exit(verdicts: Iterable[str | None], *, interrupted: bool = False) -> int:
    """The exit code of a whole session: 130 when it was interrupted, else its worst run's
    (fail over pass, a server error over a fail); a session without any run is an error."""
    if interrupted:
        return EXIT_INTERRUPTED
    codes = [exit_code(v) for v in verdicts]
    return max(codes, default=EXIT_SERVER)


def exception_exit(exc: BaseException) -> int | None:
    """The exit code a command ends with when `exc` escapes it (Ctrl-C 130, bad input 2, an OS or
    network error 3); None for an exception that is a bug and must surface."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, UsageError):
        return EXIT_USAGE
    if isinstance(exc, OSError):
        return EXIT_SERVER
    return None
