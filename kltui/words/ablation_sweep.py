"""A sweep of `kltui ablate` in words (readings/ablation_outcome.py's `SweepOutcome`, the
model's `ConfigRun`): how a configuration ended, and the verdict entry the manifest keeps."""

from __future__ import annotations

from typing import Any

from kltui.ablate.sweep import MEASURED, ConfigRun
from kltui.readings.ablation_outcome import SweepOutcome
from kltui.words.ablation import verdict_line


def run_line(run: ConfigRun) -> str:
    """How a configuration ended, in one line (server text inside: escape it to show it)."""
    if run.status == MEASURED:
        loud = f"; under --stress: {run.stress['verdict']}" if run.stress else ""
        return f"{run.name}: measured (run verdict {run.verdict}{loud})"
    if run.error:
        return run.error
    return f"{run.name}: {run.status}"


def verdict_entry(out: SweepOutcome) -> dict[str, Any]:
    """The manifest's `verdict` once the sweep ended, for `kltui runs` to list without
    folding every recording."""
    ab = out.ablation
    return {"kind": ab.verdict.kind, "line": verdict_line(ab), "exit_code": out.exit_code}


__all__ = ["run_line", "verdict_entry"]
