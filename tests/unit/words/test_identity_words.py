"""The words of the model check: one golden line per `ModelState`; the readings' tests
(tests/unit/readings/test_same_weights.py) assert the states."""

from __future__ import annotations

import pytest

from kltui.readings.identity import ModelCheck, ModelState
from kltui.words.identity import model_line


@pytest.mark.parametrize(
    "state, line",
    [
        (ModelState.SAME, "same weights (weight_version 7 reported by both servers)"),
        (ModelState.DIFFERENT, "different weights (weight_version 7 reported by both servers)"),
        (
            ModelState.UNVERIFIED,
            "weights not verified (weight_version 7 reported by both servers)",
        ),
    ],
)
def test_each_state_in_words(state: ModelState, line: str):
    assert model_line(ModelCheck(state, "weight_version 7 reported by both servers")) == line
