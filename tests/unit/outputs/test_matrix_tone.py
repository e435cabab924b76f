"""The sweep matrix colours a verdict by its kind (`outputs/ablation_matrix.Tone`), never by
reading its words: each helper effect's tone, and the same tones the words' first word gave
before (removed/reduced good; worse/introduced bad; inconclusive and "not tested" warn)."""

import pytest

from kltui.outputs.ablation_matrix import EFFECT_TONE, Tone
from kltui.readings.ablation_kinds import Effect

GOOD = {Effect.REMOVED, Effect.REMOVED_ON, Effect.REDUCED}
BAD = {Effect.WORSE, Effect.INTRODUCED}
WARN = {Effect.INCONCLUSIVE, Effect.NOT_TESTED}


@pytest.mark.parametrize("effect", list(Effect))
def test_each_effect_has_its_tone(effect: Effect):
    want = (
        Tone.GOOD
        if effect in GOOD
        else Tone.BAD
        if effect in BAD
        else Tone.WARN
        if effect in WARN
        else Tone.PLAIN
    )
    assert EFFECT_TONE.get(effect, Tone.PLAIN) is want
