"""`kltui ablate --stress` across the configurations in words (`readings/ablation_stress.py`
decides): one line beside the quiet verdict, and each configuration's stressed verdict."""

from __future__ import annotations

from kltui.readings.ablation_stress import StressedConfig, SweepStress, SweepStressKind
from kltui.words.stress import scope_of


def verdict_of(c: StressedConfig) -> str:
    """A configuration's stressed verdict; a clean one names the paths it never reached."""
    return c.verdict + scope_of(c.verdict, c.not_exercised)


def _where(c: StressedConfig) -> str:
    if c.first is None:
        return "a difference"
    helper, sample, position, side = c.first
    return f"{helper} sample {sample} @ {position} ({side})"


def stress_line(s: SweepStress) -> str:
    """What --stress found across the configurations, one line."""
    if s.kind is SweepStressKind.NO_BUG:
        said = ", ".join(f"{c.name} {verdict_of(c)}" for c in s.measured)
        return f"under --stress {s.level}: no state bug under load ({said})"
    where = "; ".join(f"{c.name}: {_where(c)}" for c in s.bug)
    line = (
        f"under --stress {s.level}: a state bug under load in {len(s.bug)} of "
        f"{len(s.measured)} configurations ({where}); the quiet verdict does not cover it"
    )
    match s.kind:
        case SweepStressKind.NOT_SEEN_WITH:
            return line + (
                f"; not seen with {', '.join(s.quiet)} (one stressed run each, and load is "
                "timing: re-run the sweep to confirm before calling it a fix)"
            )
        case SweepStressKind.EVERYWHERE:
            return line + "; no configuration tried removes it"
    return line + "; the base showed none under the same load"
