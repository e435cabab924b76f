"""The help screen's key lines (`words/screen_keys.py`): a key everywhere, and one that
applies only under kltui ablate or kltui monitor (each place)."""

from __future__ import annotations

from kltui.words.screen_keys import OnlyIn, key_what, only_in


def test_where_a_key_applies():
    assert only_in(OnlyIn.ABLATE) == "kltui ablate only"
    assert only_in(OnlyIn.MONITOR) == "kltui monitor only"
    assert key_what("Sweep matrix", only_in(OnlyIn.ABLATE)) == "Sweep matrix (kltui ablate only)"
    assert key_what("Monitor", only_in(OnlyIn.MONITOR)) == "Monitor (kltui monitor only)"
    assert key_what("Screenshot", None) == "Screenshot"
