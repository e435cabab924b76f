"""Golden text of each cache count kind (words/hits.py), on real SGLang 0.5.17's numbers where
there are some (../shared/gpu_sglang/README.md, "Hybrid models")."""

import pytest

from kltui.metrics.hit_rules import decode_count, prefill_count
from kltui.words.hits import count_text, sample_count_text


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (prefill_count(448, 482, None), "cached 448 of 482: a restored KV prefix"),
        (
            decode_count(400, 358, 128, None),
            "cached 400: past turn 1's prompt + 1 (359), into KV written by decode",
        ),
        (
            prefill_count(448, 482, 64),
            "cached 448 of 482: the state at a 64-token chunk boundary (384..448)",
        ),
        (
            decode_count(320, 358, 128, 256),
            "cached 320 of 486: the state at a checkpoint at or past 256 (every 256 tokens)",
        ),
        (
            decode_count(0, 100, 100, 256),
            "cached 0 of 200: no 256-token checkpoint was due yet, accepted as SGLang's rule "
            "accepts it (nothing restored)",
        ),
        (prefill_count(0, 384, None), "prompt 384: nothing cached"),
        (
            decode_count(320, 358, 128, None),
            "cached 320: not past turn 1's prompt + 1 (359), so no KV written by decode",
        ),
        (
            prefill_count(0, 384, 64),
            "prompt 384 is a multiple of the 64-token chunk: no earlier checkpoint",
        ),
        (
            prefill_count(873, 881, 64),
            "cached 873 of 881: past the last 64-token chunk boundary 832, not a checkpoint",
        ),
        (
            decode_count(128, 358, 128, 256),
            "cached 128 of 486: below the checkpoint SGLang's rule expects (at least 256, "
            "every 256 tokens)",
        ),
    ],
)
def test_each_kind_in_words(count, text):
    assert count_text(count.record()) == text


def test_a_sample_s_count_is_found_and_bad_records_read_as_none():
    counts = [{"sample": 3, **prefill_count(0, 384, 64).record()}]
    assert sample_count_text(counts, 3) == (
        "prompt 384 is a multiple of the 64-token chunk: no earlier checkpoint"
    )
    assert sample_count_text(counts, 4) is None
    assert sample_count_text("x", 3) is None and count_text({"kind": "rm -rf"}) is None
