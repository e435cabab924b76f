"""What `kltui ablate --stress` found across the configurations, beside the quiet verdict
(which reads the quiet runs only): a state bug under load, where, and whether a configuration
did without it. One stressed run per configuration: never called a fix. No words:
`words/ablation_stress.py` says it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kltui.ablate.sweep import MEASURED, ConfigRun, Sweep
from kltui.readings.stress import StressVerdict


class SweepStressKind(StrEnum):
    """The sweep's --stress outcome."""

    NO_BUG = "no-bug"  # no configuration showed a state bug under load
    NOT_IN_BASE = "not-in-base"  # some did, the base did not
    EVERYWHERE = "everywhere"  # the base did, and no configuration tried went without
    NOT_SEEN_WITH = "not-seen-with"  # the base did; some configurations showed none


@dataclass(frozen=True)
class StressedConfig:
    """One configuration's stressed run: its verdict (a `StressVerdict`; a word this kltui
    does not know stays as recorded), what its traffic never reached (`not_exercised`, as its
    JSON holds it) and where it first differed (helper, sample, position, side; None: no
    difference recorded)."""

    name: str
    verdict: StressVerdict | str
    not_exercised: dict
    first: tuple[str, object, object, object] | None = None


@dataclass(frozen=True)
class SweepStress:
    """The finding: its kind, the level, every measured configuration's stressed run, the
    ones with a state bug under load and the ones without one that were not inconclusive."""

    kind: SweepStressKind
    level: str
    measured: tuple[StressedConfig, ...]
    bug: tuple[StressedConfig, ...]
    quiet: tuple[str, ...]


def config_stress(run: ConfigRun | None) -> StressedConfig | None:
    """A configuration's stressed run as its JSON holds it, whatever its status (None: it was
    not stressed, or holds no verdict)."""
    s = run.stress if run is not None and isinstance(run.stress, dict) else None
    verdict = None if s is None else s.get("verdict")
    if run is None or s is None or not isinstance(verdict, str):
        return None
    kind = StressVerdict(verdict) if verdict in StressVerdict._value2member_map_ else verdict
    missed = s.get("not_exercised")  # absent in recordings from before the field
    return StressedConfig(run.name, kind, missed if isinstance(missed, dict) else {}, _first(s))


def _stressed(run: ConfigRun) -> StressedConfig | None:
    c = config_stress(run)
    return c if run.status == MEASURED and c is not None and c.verdict else None


def _first(stress: dict) -> tuple[str, object, object, object] | None:
    for h in stress.get("helpers") or ():
        f = h.get("first_difference") if isinstance(h, dict) else None
        if isinstance(f, dict):
            return (str(h.get("helper")), f.get("sample"), f.get("position"), f.get("side"))
    return None


def read_stress(sweep: Sweep) -> SweepStress | None:
    """The sweep's --stress finding (None: no configuration was measured under --stress)."""
    pairs = [(r, c) for r in sweep.runs if (c := _stressed(r)) is not None]
    if not pairs:
        return None
    measured = tuple(c for _r, c in pairs)
    bug = tuple(c for c in measured if c.verdict == StressVerdict.STATE_BUG)
    level = str((pairs[0][0].stress or {}).get("level", "?"))
    base_bug = any(r is sweep.base for r, c in pairs if c in bug)
    quiet = tuple(
        c.name for c in measured if c not in bug and c.verdict != StressVerdict.INCONCLUSIVE
    )
    if not bug:
        kind = SweepStressKind.NO_BUG
    elif not base_bug:
        kind = SweepStressKind.NOT_IN_BASE
    else:
        kind = SweepStressKind.NOT_SEEN_WITH if quiet else SweepStressKind.EVERYWHERE
    return SweepStress(kind, level, measured, bug, quiet)
