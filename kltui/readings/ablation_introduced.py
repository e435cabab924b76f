"""A knob that introduces a divergence the base does not have (issue 44): on a base that is
bit-exact on a helper (at the 1e-9 floor), a configuration above it beyond chance, or orders of
magnitude above rounding on named samples (`Effect.INTRODUCED`, `ablation_helper._compared`).
Breaking bit-exactness is a finding of its own: the verdict names each such knob, the JSON
lists them (`verdict.introduced`) and the sweep exits 1 (`sweep_manifest.Sweep.exit_code`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import num
from kltui.readings.ablation_kinds import INTRODUCED


@dataclass(frozen=True)
class Introduction:
    """One configuration bringing a divergence to one helper the base passes at the floor."""

    config: str
    helper: str
    base_level: float | None
    level: float | None
    samples: tuple[int, ...]  # the samples far above rounding it rests on ([]: the paired test)
    evidence: str  # what it rests on, in words

    def to_json(self) -> dict:
        """Its entry in the JSON verdict's `introduced`."""
        return {
            "config": self.config,
            "helper": self.helper,
            "base_avg_kl_div": self.base_level,
            "avg_kl_div": self.level,
            "samples": list(self.samples),
            "evidence": self.evidence,
        }


def introductions(configs: Sequence[ConfigReading]) -> tuple[Introduction, ...]:
    """Every helper a counted configuration (measured, not a trap) introduced a divergence to."""
    return tuple(
        Introduction(c.name, h.helper, h.base_level, h.level, h.samples, h.introduced())
        for c in configs
        if c.measured and c.trap is None
        for h in c.helpers
        if h.effect == INTRODUCED
    )


def introduced_line(found: Sequence[Introduction]) -> str:
    """ "chunked-prefill-size=16 introduces a divergence: match 0 -> 5.6e-3 (higher than the
    base in 12 of 12 samples (signed-rank p=0.00049)); ..." one clause per configuration."""
    order: list[str] = []
    for i in found:
        if i.config not in order:
            order.append(i.config)
    parts = []
    for name in order:
        each = ", ".join(
            f"{i.helper} {num(i.base_level)} -> {num(i.level)} ({i.evidence})"
            for i in found
            if i.config == name
        )
        parts.append(f"{name} introduces a divergence: {each}")
    return "; ".join(parts)


def introduced_step(found: Sequence[Introduction]) -> str:
    """The next step when a knob breaks a bit-exact base."""
    names = list(dict.fromkeys(i.config for i in found))
    verb = "breaks" if len(names) == 1 else "each break"
    return (
        f"{', '.join(names)} {verb} the base's bit-exactness: keep the base's setting, or find "
        "the module on a server launched with it (kltui dumps)"
    )
