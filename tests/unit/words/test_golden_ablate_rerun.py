"""A `check --repeat` re-run's line in words (`words/compare.rerun_line`, which the console and
every report print): one golden per comparison (identical, differs, not comparable); the
repeat's integration test asserts the views show it for the recorded runs."""

from __future__ import annotations

from kltui.readings.compare import NotComparable, RerunEquality
from kltui.words.compare import rerun_line


def test_each_rerun_line():
    assert rerun_line(RerunEquality(True), 2) == (
        "re-run 2 vs 1: bit-identical (every token id and logprob)"
    )
    assert rerun_line(RerunEquality(False), 3) == "re-run 3 vs 2: differs"
    assert rerun_line(RerunEquality(None, NotComparable.NO_HELPER), 2) == (
        "re-run 2 vs 1: not comparable (no helper ran)"
    )
