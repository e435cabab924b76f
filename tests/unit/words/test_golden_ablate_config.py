"""A measured configuration's console line in words (`words/ablation_config.config_line`), one
golden per condition the line can show; the ablation's tests assert the reading and that the
console's lines are these functions' (tests/unit/ablate/test_ablate_reading.py)."""

from __future__ import annotations

import pytest

from kltui.ablate.plan import Config
from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_kinds import Effect
from kltui.readings.findings import Kind
from kltui.words.ablation_config import config_line

BASE = HelperReading("match", "base", 8.5e-3, None, 32, 0, 0, 0, None, Effect.BASE)
FA3 = HelperReading("match", "fa3", 0.0, 8.5e-3, 32, 32, 32, 0, None, Effect.REMOVED)


@pytest.mark.parametrize(
    ("name", "helper", "kind", "line"),
    [
        ("base", BASE, Kind.ONE, "base: match 8.5e-3 [condition 1]"),
        ("base", BASE, Kind.BOTH, "base: match 8.5e-3 [condition 1+2]"),
        ("base", BASE, None, "base: match 8.5e-3 [inconclusive]"),
        (
            "attention-backend=fa3",
            FA3,
            Kind.EXACT,
            "attention-backend=fa3: match 0 (removed) [condition 0]",
        ),
    ],
)
def test_a_measured_configurations_line(name, helper, kind, line):
    assert config_line(ConfigReading(Config(name), (helper,), kind=kind)) == line
