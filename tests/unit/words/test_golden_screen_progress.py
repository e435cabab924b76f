"""The dashboard's progress in words (`words/screen_progress.py`): a helper's row before its
decode streams, with an ETA and without (each thing it waits for), at 80 columns; the counters
panel without figures (each kind) and the decode's pace. tests/tui/test_progress_estimate.py
and test_small_things.py assert these functions' output is what the panels show."""

from __future__ import annotations

from kltui.words.screen_progress import (
    Unscored,
    Waiting,
    before_decode,
    before_decode_line,
    decoding_pace,
    unscored,
)


def test_a_row_with_an_eta():
    assert before_decode((1, 3), 42.0, 65.0, Waiting.FIRST_TOKENS) == (
        "1/3 requests",
        " · 42.0s",
        " · ETA ~1m05s",
    )
    assert before_decode_line((0, 3), 30.0, 30.0, Waiting.FIRST_TOKENS) == (
        "0/3 requests · 30.0s · ETA ~30.0s"
    )
    assert before_decode_line((0, 3), 40.0, -10.0, Waiting.ANSWER) == (
        "0/3 requests · 40.0s · ETA ~0.0s"
    )


def test_a_row_without_an_estimate_says_what_it_waits_for():
    assert before_decode_line((0, 2), 12.0, None, Waiting.FIRST_TOKENS) == (
        "0/2 requests · 12.0s · estimating: first tokens"
    )
    assert before_decode_line((1, 3), 2.5, None, Waiting.FLUSH) == (
        "1/3 requests · 2.5s · estimating: the flush"
    )
    assert before_decode_line((1, 2), 5.0, None, Waiting.ANSWER) == (
        "1/2 requests · 5.0s · estimating: its answer"
    )
    assert before_decode_line(None, 5.0, None, Waiting.ANSWER) == "5.0s · estimating: its answer"


def test_a_row_at_80_columns():
    assert before_decode((0, 2), 12.0, None, Waiting.FIRST_TOKENS, compact=True) == ("0/2",)
    assert before_decode_line((0, 3), 30.0, 30.0, Waiting.FIRST_TOKENS, compact=True) == (
        "0/3 · ETA ~30.0s"
    )
    assert before_decode_line(None, 30.0, 30.0, Waiting.ANSWER, compact=True) == "ETA ~30.0s"


def test_the_counters_without_figures():
    assert unscored(Unscored.NO_HELPER) == "no helper selected"
    assert unscored(Unscored.NO_SAMPLE) == "waiting for the first scored sample"
    assert decoding_pace(1600.4, 0.1) == "decoding at 1,600 tok/s, ETA 0.1s"
    assert decoding_pace(95.0, 125.0) == "decoding at 95 tok/s, ETA 2m05s"
    assert decoding_pace(12_345.0, None) == "decoding at 12,345 tok/s"
