"""The words of whether two servers load the same model (`readings/identity.py`)."""

from __future__ import annotations

from kltui.readings.identity import ModelCheck, ModelState
from kltui.run.refusal import check_words

_HEAD = {ModelState.SAME: "same weights", ModelState.DIFFERENT: "different weights"}


def model_line(check: ModelCheck) -> str:
    """One plain-text line for a view ("same weights (...)")."""
    return f"{_HEAD.get(check.state, 'weights not verified')} ({check_words(check)})"


def check_json(check: ModelCheck) -> dict[str, str]:
    """The check as the JSON result writes it (docs/JSON.md `model_check`): its state, what it
    rests on (`basis`) and why in words."""
    return {"state": check.state, "why": check_words(check), "basis": check.basis}
