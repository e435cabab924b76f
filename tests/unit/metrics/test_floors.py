"""cross_engine's floors (issue 47): each engine against itself in cross_engine's own metrics,
and the gap read against the larger floor."""

from __future__ import annotations

import numpy as np
import pytest

from kltui.metrics.cross import Side, cross_positions, cross_summary
from kltui.metrics.floors import (
    NOISE_RATIO,
    FloorKind,
    floor_figures,
    floor_positions,
    floor_sample,
    gap_on,
    read_floors,
)
from kltui.readings.floors import kind_of, read

IDS = np.array([5, 6, 7, 8])
TOP_IDS = np.array([[5, 1], [6, 2], [7, 3], [9, 8]])


def side(lp, top_lp, top_ids=TOP_IDS) -> Side:
    return Side(IDS, np.asarray(lp, float), np.asarray(top_ids), np.asarray(top_lp, float))


FIRST = side([-0.1, -0.2, -0.3, -1.3], [[-0.1, -3], [-0.2, -3], [-0.3, -3], [-1.0, -1.3]])
# the same engine in another batch: position 1 moved by 1e-3, position 3's top-1 flipped (a
# near tie: margins 0.3 and 0.02 nats)
AGAIN = side(
    [-0.1, -0.201, -0.3, -0.70],
    [[-0.1, -3], [-0.201, -3], [-0.3, -3], [-0.70, -0.72]],
    [[5, 1], [6, 2], [7, 3], [8, 9]],
)


def test_a_floor_is_the_engines_own_metrics_on_its_two_answers():
    pos = floor_positions(FIRST, AGAIN)
    ref = cross_positions(FIRST, AGAIN)
    assert np.array_equal(pos.k3, ref.k3) and np.array_equal(pos.abs_delta, ref.abs_delta)
    fig = floor_figures([(3, pos)], k=2)
    same = cross_summary([(3, pos)], k=2)
    for key in ("mean_abs_delta", "max_abs_delta", "top1_agreement", "flip_margins"):
        assert getattr(fig, key) == getattr(same, key), key
    assert fig.avg_k3 == pytest.approx(float(np.mean(pos.k3)))
    assert fig.samples == (3,) and fig.positions == 4
    assert fig.differing_positions == 2 and fig.zero is False
    assert fig.top1_agreement == 0.75
    # top-1 of position 3 went from 9 to 8, the wider margin 0.3 nats: a flip inside the line
    assert fig.flip_margins.flips == 1 and fig.flip_margins.within_line == 1


def test_a_batch_invariant_engine_has_a_floor_of_exactly_zero():
    fig = floor_figures(
        [(0, floor_positions(FIRST, FIRST)), (1, floor_positions(AGAIN, AGAIN))], k=2
    )
    assert fig.zero is True and fig.avg_k3 == 0.0 and fig.differing_positions == 0
    vllm = read({"vllm": fig.to_json()}).engines["vllm"]
    assert vllm is not None and vllm.zero and vllm.differing_positions == 0
    assert floor_figures([], k=2).zero is False  # nothing measured is not zero


def test_the_sample_is_evenly_spread_and_says_how_many():
    assert floor_sample(list(range(32)), 8) == [0, 4, 9, 13, 18, 22, 27, 31]
    assert floor_sample([3, 5], 8) == [3, 5]
    assert floor_sample(list(range(10)), 0) == []


@pytest.mark.parametrize(
    ("gap", "sg", "vl", "kind", "engine"),
    [
        (1e-3, 1e-5, 2e-5, FloorKind.ABOVE, "vLLM"),
        (3e-5, 2e-5, 1e-5, FloorKind.WITHIN, "SGLang"),
        (NOISE_RATIO * 2e-5, 2e-5, 0.0, FloorKind.WITHIN, "SGLang"),  # the line itself: within
        (1e-9, 0.0, 0.0, FloorKind.FLOOR_ZERO, "vLLM"),
        (0.0, 1e-5, 1e-5, FloorKind.IDENTICAL, "vLLM"),
        (None, 1e-5, 1e-5, FloorKind.UNMEASURED, None),
        (1e-3, float("nan"), 1e-5, FloorKind.UNMEASURED, None),
    ],
)
def test_the_gap_against_the_larger_floor(gap, sg, vl, kind, engine):
    r = read_floors(gap, sg, vl)
    assert r.kind is kind and r.larger_engine == engine
    if kind in (FloorKind.ABOVE, FloorKind.WITHIN):
        assert r.ratio == pytest.approx(gap / max(sg, vl))


def test_the_gap_is_taken_on_the_floors_samples():
    means = {0: 1e-4, 1: 3e-4, 2: 5e-4}
    assert gap_on(means, [0, 2]) == pytest.approx(3e-4)
    assert gap_on(means, [7]) is None


def _floors(reading) -> dict:
    fig = floor_figures([(0, floor_positions(FIRST, AGAIN))], k=2).to_json()
    return {
        "samples": [0], "of": 4, "composition": "one at a time", "first_batch": 4,
        "same_composition": False, "error": None, "sglang": fig, "vllm": fig,
        "gap": {"avg_k3": reading.gap}, "reading": reading.to_json(),
    }  # fmt: skip


def test_the_reading_and_its_figures_are_read_back_from_the_summary():
    above = read(_floors(read_floors(1.5e-2, 2e-4, 3e-3)))
    assert above.kind is FloorKind.ABOVE and above.reading.ratio == pytest.approx(5)
    assert above.reading.larger_engine == "vLLM" and above.reading.larger == 3e-3
    assert (above.count, above.of, above.composition, above.first_batch) == (
        1,
        4,
        "one at a time",
        4,
    )
    assert not above.same_composition and above.error is None
    vllm = above.engines["vllm"]
    assert vllm is not None and (vllm.differing_positions, vllm.positions) == (2, 4)
    assert read(_floors(read_floors(3e-3, 2e-4, 3e-3))).kind is FloorKind.WITHIN
    assert read(_floors(read_floors(1e-6, 0.0, 0.0))).kind is FloorKind.FLOOR_ZERO
    assert kind_of({"reading": {"kind": "something else"}}) is FloorKind.UNMEASURED
    assert read({**_floors(read_floors(1e-6, 0.0, 0.0)), "error": "x: gone"}).error == "x: gone"
