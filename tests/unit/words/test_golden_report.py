"""A report's headline and notes in words (`words/report_headline.py`, `words/report_notes.py`):
the Markdown headline, each `Partial` kind's banner and quote, a helper that did not finish as
each format says it, and the problems past the listed ones; tests/reports assert that each
report shows these functions' output."""

from __future__ import annotations

from kltui.words.report_headline import Partial, banner, headline, md_quote
from kltui.words.report_notes import (
    cut_short_in,
    did_not_finish,
    helper_did_not_finish,
    more_problems,
)


def test_headline():
    assert headline("❌ fail", 1, 3) == "kltui alignment: ❌ fail — 1/3 helpers pass"
    assert headline("⛔ error", 2, 2) == "kltui alignment: ⛔ error — 2/2 helpers pass"


def test_each_banner():
    assert banner(Partial.NO_RUN) == (
        "The recording holds no run: it ended before the servers were identified."
    )
    assert banner(Partial.CUT_SHORT) == (
        "The recording's last line was cut short (the run was killed while writing); "
        "everything up to the last complete event is shown."
    )
    assert banner(Partial.UNFINISHED) == "The run did not finish: results below are partial."
    assert banner(Partial.INTERRUPTED) == "The run was interrupted: results below are partial."


def test_each_markdown_quote():
    assert md_quote(Partial.NO_RUN) == (
        "The recording holds no run (it ended before the servers were identified)."
    )
    assert md_quote(Partial.CUT_SHORT) == "⚠️ The recording was cut short; results are partial."


def test_a_helper_that_did_not_finish():
    assert did_not_finish("decode") == "did not finish (last phase decode)"
    assert helper_did_not_finish("decode") == "helper did not finish (last phase: decode)"
    assert cut_short_in("decode") == "did not finish (cut short in phase decode)"


def test_more_problems():
    assert more_problems(5) == "… and 5 more problems in the recording"
