"""cross_engine's floors in words: one golden line per `FloorKind` (the long line and the TUI's
short one), each engine against itself, and the rows every report shows; the readings' tests
assert the kinds and figures."""

from __future__ import annotations

import pytest

from kltui.metrics.floors import FloorKind, read_floors
from kltui.words.floors import floor_rows, floor_value, how, short_line, verdict_line

NOISY = {"samples": [0], "positions": 4, "avg_k3": 2.5e-4, "mean_abs_delta": 1e-3,
         "max_abs_delta": 3e-3, "top1_agreement": 0.75, "differing_positions": 2, "zero": False,
         "flip_margins": {"flips": 1, "within_line": 1, "across_line": 0, "line": 0.7}}  # fmt: skip
ZERO = {**NOISY, "avg_k3": 0.0, "zero": True, "differing_positions": 0}


def floors(gap, sglang, vllm, **kw) -> dict:
    r = read_floors(gap, sglang, vllm)
    return {"samples": [0, 5], "of": 8, "composition": "one at a time", "first_batch": 4,
            "same_composition": False, "error": None, "sglang": ZERO, "vllm": NOISY,
            "gap": {"avg_k3": r.gap}, "reading": r.to_json(), **kw}  # fmt: skip


@pytest.mark.parametrize(
    "fl, kind, line, short",
    [
        (
            floors(1.5e-2, 2e-4, 3e-3),
            FloorKind.ABOVE,
            "the engines differ by 1.500e-02 (avg k3), 5 times the larger floor (vLLM against "
            "itself, 3.000e-03)",
            "5x the larger floor",
        ),
        (
            floors(3e-3, 2e-4, 3e-3),
            FloorKind.WITHIN,
            "within the engines' own noise: the engines differ by 3.000e-03 (avg k3), 1 times "
            "the larger floor (vLLM against itself, 3.000e-03)",
            "own noise (1x floor)",
        ),
        (
            floors(1e-6, 0.0, 0.0),
            FloorKind.FLOOR_ZERO,
            "the engines differ by 1.000e-06 (avg k3) while each engine's floor is exactly 0 "
            "(2 of 8 sequences bit-identical one at a time and in batches of up to 4): none of "
            "the gap is either engine's own noise between those batches",
            "floors 0: engines differ",
        ),
        (
            floors(0.0, 1e-6, 2e-6),
            FloorKind.IDENTICAL,
            "the engines agree bit for bit on the floors' samples",
            "engines bit-identical",
        ),
        (floors(None, 1.0, 1.0), FloorKind.UNMEASURED, "floors not measured", "not measured"),
    ],
)
def test_each_kind_in_one_line(fl, kind, line, short):
    assert fl["reading"]["kind"] == kind
    assert verdict_line(fl) == line
    assert short_line(fl) == short


def test_floors_not_measured_say_why():
    assert verdict_line(None) == "floors not measured"
    gone = floors(1e-6, 0.0, 0.0, error="x: gone")
    assert verdict_line(gone) == "floors not measured: x: gone"
    assert short_line(gone) == "not measured" and short_line(None) == "not measured"


def test_the_rows_say_what_was_scored_again_and_each_engine_against_itself():
    assert floor_rows(floors(1.5e-2, 2e-4, 3e-3)) == [
        ("floors", "2 of 8 samples scored again one at a time (first in batches of up to 4)"),
        (
            "SGLang vs itself",
            "exactly 0: bit-identical at all 4 positions (alone and in the first scoring's "
            "batches alike)",
        ),
        (
            "vLLM vs itself",
            "avg k3 2.500e-04, mean |Δ| 1.000e-03, max |Δ| 3.000e-03, top-1 75.00%, flips 1 "
            "(0 across 0.7 nats), 2 of 4 positions differ",
        ),
        (
            "gap against the floors",
            "the engines differ by 1.500e-02 (avg k3), 5 times the larger floor (vLLM against "
            "itself, 3.000e-03)",
        ),
    ]
    assert floor_rows(None) == []
    fl = floors(1.0, 1.0, 1.0, same_composition=True, first_batch=None, composition=None)
    assert how(fl) == (
        "2 of 8 samples scored again another batch: the same composition as the first "
        "scoring, so run-to-run noise only"
    )
    assert [floor_value(fl, "sglang"), floor_value(fl, "vllm"), floor_value({}, "vllm")] == [
        "0 exactly", "2.500e-04", "–"]  # fmt: skip
