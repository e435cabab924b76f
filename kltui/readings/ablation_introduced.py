"""A knob that introduces a divergence the base does not have (issue 44): on a base that is
bit-exact on a helper (at the 1e-9 floor), a configuration above it beyond chance, or orders of
magnitude above rounding on named samples (`Effect.INTRODUCED`, `ablation_helper._compared`).
Breaking bit-exactness is a finding of its own: the verdict names each such knob, the JSON
lists them (`verdict.introduced`) and the sweep exits 1 (`ablation_outcome.exit_code`); the
words are words/ablation.py's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_kinds import INTRODUCED


@dataclass(frozen=True)
class Introduction:
    """One configuration bringing a divergence to one helper the base passes at the floor."""

    config: str
    helper: str
    base_level: float | None
    level: float | None
    samples: tuple[int, ...]  # the samples far above rounding it rests on ([]: the paired test)
    reading: HelperReading  # the helper's reading: what the evidence rests on


def introductions(configs: Sequence[ConfigReading]) -> tuple[Introduction, ...]:
    """Every helper a counted configuration (measured, not a trap) introduced a divergence to."""
    return tuple(
        Introduction(c.config.name, h.helper, h.base_level, h.level, h.samples, h)
        for c in configs
        if c.measured and c.trap is None
        for h in c.helpers
        if h.effect == INTRODUCED
    )
