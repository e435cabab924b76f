"""The words of whether two servers load the same model (`readings/identity.py`)."""

from __future__ import annotations

from kltui.readings.identity import ModelCheck, ModelState

_HEAD = {ModelState.SAME: "same weights", ModelState.DIFFERENT: "different weights"}


def model_line(check: ModelCheck) -> str:
    """One plain-text line for a view ("same weights (...)")."""
    return f"{_HEAD.get(check.state, 'weights not verified')} ({check.why})"
