"""Why a --stress squeeze sent nothing, in words: one golden line per `SkipKind`
(`readings/stress.squeeze_skip` reads it from a tick's figures; its tests assert the kind)."""

from __future__ import annotations

import pytest

from kltui.readings.stress import SkipKind, SqueezeSkip, squeeze_skip
from kltui.words.stress import squeeze_skip_text


@pytest.mark.parametrize(
    ("skip", "text"),
    [
        (
            SqueezeSkip(SkipKind.NO_POOL),
            "the server reports no KV pool size (max_total_num_tokens)",
        ),
        (
            SqueezeSkip(SkipKind.OVER_LEVEL, 826914, "light", 8192),
            "826914 tokens needed, over the light level's 8192",
        ),
        (SqueezeSkip(SkipKind.RECORDED, recorded="the pool was busy"), "the pool was busy"),
    ],
)
def test_each_squeeze_skip_in_words(skip: SqueezeSkip, text: str):
    assert squeeze_skip_text(skip) == text


def test_every_skip_kind_has_its_golden_line():
    said = {
        squeeze_skip_text(SqueezeSkip(k, 1, "light", 2, recorded="as recorded")) for k in SkipKind
    }
    assert len(said) == len(SkipKind)


def test_the_words_read_back_what_the_recording_said():
    # run/stress.py writes the reason as text in the recording; the reading takes its figures
    # and the words say it again, the same
    for note in (
        {"pool": None, "skipped": "the server reports no KV pool size (max_total_num_tokens)"},
        {"pool": 845617, "target": 826914, "skipped": "826914 tokens needed, over the light level's 8192"},
    ):  # fmt: skip
        got = squeeze_skip(note)
        assert got is not None and squeeze_skip_text(got) == note["skipped"]
    assert squeeze_skip({"pool": 9, "sent_tokens": 4}) is None
