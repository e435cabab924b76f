"""The words at the top of a report: the Markdown headline (the verdict and how many helpers
passed) and why its results are partial (`Partial`: no run, a cut-short recording, an
unfinished or interrupted run), as the HTML banners and the Markdown quotes say it."""

from __future__ import annotations

from enum import StrEnum


class Partial(StrEnum):
    """Why a report's results are partial."""

    NO_RUN = "no run"  # the recording ended before the servers were identified
    CUT_SHORT = "cut short"  # the recording's last line was cut (a killed run)
    UNFINISHED = "unfinished"  # no RunFinished
    INTERRUPTED = "interrupted"  # RunFinished with the verdict interrupted


def headline(verdict_label: str, passed: int, helpers: int) -> str:
    """The Markdown report's first line, without its heading marks (`verdict_label`: the
    verdict as the report shows it, its icon and word)."""
    return f"kltui alignment: {verdict_label} — {passed}/{helpers} helpers pass"


_BANNERS = {
    Partial.NO_RUN: "The recording holds no run: it ended before the servers were identified.",
    Partial.CUT_SHORT: (
        "The recording's last line was cut short (the run was killed while writing); "
        "everything up to the last complete event is shown."
    ),
    Partial.UNFINISHED: "The run did not finish: results below are partial.",
    Partial.INTERRUPTED: "The run was interrupted: results below are partial.",
}

_QUOTES = {
    Partial.NO_RUN: "The recording holds no run (it ended before the servers were identified).",
    Partial.CUT_SHORT: "⚠️ The recording was cut short; results are partial.",
}


def banner(kind: Partial) -> str:
    """The HTML report's banner for `kind`."""
    return _BANNERS[kind]


def md_quote(kind: Partial) -> str:
    """The Markdown report's quoted line for NO_RUN or CUT_SHORT (an unfinished run shows in
    its helpers' notes)."""
    return _QUOTES[kind]
