"""`--batch-sizes` in words: one golden line per `BatchKind`; the kinds themselves from
`readings/batch_probe.finding`."""

from __future__ import annotations

import pytest

from kltui.readings.batch_sizes import BatchKind, finding
from kltui.session.events import BatchProbed
from kltui.words.batch_sizes import probe_line

S = "http://127.0.0.1:30000"
FIRST = {"sample": 1, "position": 3, "side": "decode"}
HEAD = "match at batch sizes 1,2,4 (4 samples): "


@pytest.mark.parametrize(
    "ev, det, kind, line",
    [
        (
            BatchProbed("match", S, [1, 2, 4], 4, error="HTTP 500"),
            True,
            BatchKind.STOPPED,
            HEAD + "probe stopped: HTTP 500",
        ),
        (
            BatchProbed("match", S, [1], 4),
            True,
            BatchKind.ONE_SIZE,
            "match at batch sizes 1 (4 samples): inconclusive: one batch size run, nothing to "
            "compare it with",
        ),
        (
            BatchProbed("match", S, [1, 2, 4], 4),
            True,
            BatchKind.IDENTICAL,
            HEAD + "bit-identical at every batch size",
        ),
        (
            BatchProbed("match", S, [1, 2, 4], 4, 4, FIRST),
            False,
            BatchKind.VARIANT,
            HEAD + "tokens change first at batch 4, sample 1 @ 3 (decode side): expected of "
            "batch-variant kernels",
        ),
        (
            BatchProbed("match", S, [1, 2, 4], 4, 4, FIRST),
            True,
            BatchKind.GAP,
            HEAD + "tokens change first at batch 4, sample 1 @ 3 (decode side): a "
            "batch-invariance gap on a deterministic server (what 'deterministic mode diverges "
            "above batch 2' reports)",
        ),
        (
            BatchProbed("match", S, [2, 4], 4, 2, FIRST),
            True,
            BatchKind.GAP,
            "match at batch sizes 2,4 (4 samples): tokens change first at batch 2, sample 1 @ 3 "
            "(decode side): a batch-invariance gap",
        ),
    ],
)
def test_each_kind_in_one_line(ev, det, kind, line):
    f = finding(ev, det)
    assert f.kind is kind
    assert probe_line(f) == line


def test_sizes_not_reached_are_named_with_the_samples_that_reach_them():
    ev = BatchProbed("match", S, [1, 4], 4, not_reached=[8, 32], prompts=4)
    assert probe_line(finding(ev, True)) == (
        "match at batch sizes 1,4 (4 samples; 8,32 not reached with 4 prompts, --samples 32 "
        "reaches them): bit-identical at every batch size run"
    )
