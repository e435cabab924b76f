"""The words of a report's notes on helpers and problems: a helper that did not finish (as
Markdown, HTML and JUnit each say it) and the problems past the listed ones."""

from __future__ import annotations


def did_not_finish(phase: str) -> str:
    """Markdown's note on a helper that never finished (`phase`: its last phase)."""
    return f"did not finish (last phase {phase})"


def helper_did_not_finish(phase: str) -> str:
    """HTML's note on a helper that never finished."""
    return f"helper did not finish (last phase: {phase})"


def cut_short_in(phase: str) -> str:
    """JUnit's error message for a helper that never finished."""
    return f"did not finish (cut short in phase {phase})"


def more_problems(n: int) -> str:
    """The line after the listed problems: how many more the recording holds."""
    return f"… and {n} more problems in the recording"
