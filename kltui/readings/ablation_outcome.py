"""What a sweep of `kltui ablate` came to, computed once for every front end: the reading of
its measured configurations (`readings/ablation.read`), its exit code and its time split
(`SweepOutcome`). The console, the reports, the JSON document and the TUI render this;
none of them asks run/ for it."""

from __future__ import annotations

from dataclasses import dataclass

from kltui.ablate.sweep import MEASURED, Sweep, Timing
from kltui.errors import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_PASS, EXIT_SERVER
from kltui.readings.ablation import Ablation, read
from kltui.readings.ablation_kinds import VerdictKind
from kltui.readings.stress import StressVerdict

# the verdicts that say what a setting does (exit 0); the others leave the question open (1)
ANSWERED = (VerdictKind.NOT_REPRODUCED, VerdictKind.LOCALIZED, VerdictKind.REDUCED)


@dataclass(frozen=True)
class SweepOutcome:
    """A sweep's reading, exit code and time split."""

    ablation: Ablation
    exit_code: int
    timing: Timing


def reading(sweep: Sweep) -> Ablation:
    """What the measured configurations show (so far, while the sweep runs)."""
    return read([r.config for r in sweep.runs], sweep.stores(), pairs_run=sweep.pairs_run)


def stress_bug(sweep: Sweep) -> bool:
    """Whether --stress found a state bug under load in a measured configuration (its
    manifest entry's verdict kind)."""
    return any(
        isinstance(r.stress, dict) and r.stress.get("verdict") == StressVerdict.STATE_BUG
        for r in sweep.runs
        if r.status == MEASURED
    )


def pairs_ran_none(sweep: Sweep) -> bool:
    """--pairs was asked for on a measured base and ran nothing: fewer than two single knobs
    counted (measured, took effect, moved a helper the base diverges on)."""
    return sweep.pairs_asked and not sweep.pairs_run and sweep.base.status == MEASURED


def exit_code(sweep: Sweep, ab: Ablation) -> int:
    """0: the verdict answers the question (localized, reduced, not reproduced); 1: it does
    not (no single knob, inconclusive; for helpers that read differently, the weakest), a
    knob introduces a divergence the base does not have, or --stress found a state bug
    under load; 3: the base did not start or no other configuration was measured; 130:
    interrupted."""
    if sweep.interrupted:
        return EXIT_INTERRUPTED
    if sweep.base.status != MEASURED or not any(r.status == MEASURED for r in sweep.runs[1:]):
        return EXIT_SERVER
    if stress_bug(sweep):
        return EXIT_FAIL  # as `kltui check --stress` fails on one, whatever the quiet verdict
    if ab.verdict.introduced:
        return EXIT_FAIL  # a knob breaks a helper the base passes bit-exact: a finding
    return EXIT_PASS if ab.verdict.kind in ANSWERED else EXIT_FAIL


def outcome(sweep: Sweep) -> SweepOutcome:
    """The sweep's reading, exit code and time split, once."""
    ab = reading(sweep)
    return SweepOutcome(ab, exit_code(sweep, ab), sweep.timing())
