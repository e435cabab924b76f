"""The monitor's retention, said at start (`words/probe.keep_words`): golden lines for a size
under and over 10 MB; the monitor's tests compare what it prints with `keep_words`."""

from __future__ import annotations

from kltui.words.probe import keep_words


def test_small_recordings_keep_a_decimal():
    assert keep_words(288, 20_000) == "keeping the last 288 probes' recordings (~5.8 MB); --keep N"


def test_large_recordings_are_whole_megabytes():
    assert keep_words(288, 80_000) == "keeping the last 288 probes' recordings (~23 MB); --keep N"
