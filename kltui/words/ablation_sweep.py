"""A sweep of `kltui ablate` in words (readings/ablation_outcome.py's `SweepOutcome`, the
model's `ConfigRun`): how a configuration ended, the verdict entry the manifest keeps, and the
sweep's own lines: the configurations --pairs adds, why it added none, an interruption."""

from __future__ import annotations

from typing import Any

from kltui.ablate.sweep import MEASURED, ConfigRun, Sweep
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


def nothing_to_show(name: str, run: ConfigRun | None) -> str:
    """Enter on a configuration with nothing measured: why the dashboard stays on the matrix
    (how it failed, else not measured yet)."""
    why = run_line(run) if run is not None and run.error else "not measured yet"
    return f"{name}: nothing to show on the dashboard ({why})"


def verdict_entry(out: SweepOutcome) -> dict[str, Any]:
    """The manifest's `verdict` once the sweep ended, for `kltui runs` to list without
    folding every recording."""
    ab = out.ablation
    return {"kind": ab.verdict.kind, "line": verdict_line(ab), "exit_code": out.exit_code}


# an interrupted sweep, under its table (the configurations measured before it are kept)
INTERRUPTED_LINE = "interrupted: the configurations above were measured"
# --pairs asked, and the sweep found fewer than two single knobs to pair
# (`readings/ablation_outcome.pairs_ran_none`)
PAIRS_NONE_LINE = (
    "--pairs: fewer than two single knobs counted (measured, took effect, moved a helper "
    "the base diverges on): no pairs to run"
)


def head_line(sweep: Sweep) -> str:
    """Above the TUI's matrix: the mode, how many configurations and how they stand, whether
    the sweep runs, is done or was interrupted, the folder."""
    counts: dict[str, int] = {}
    for r in sweep.runs:
        counts[r.status] = counts.get(r.status, 0) + 1
    stand = ", ".join(f"{n} {s}" for s, n in counts.items())
    state = (
        "interrupted" if sweep.interrupted else "done" if sweep.total_s is not None else "running"
    )
    return (
        f"{sweep.mode} mode · {len(sweep.runs)} configurations ({stand}) · sweep {state} · "
        f"folder {sweep.folder}"
    )


def helper_pick(helper: str | None, names: list[str]) -> str:
    """Under the TUI's header: the helper the matrix shows, which of how many, the keys."""
    if helper not in names:
        return "no helper measured yet"
    return f"helper {helper} ({names.index(helper) + 1} of {len(names)}; [ ] switch)"


def sweep_start(names: list[str], folder: str) -> str:
    """The sweep's first line: the configurations planned and the sweep folder."""
    return f"kltui ablate: {len(names)} configurations ({', '.join(names)}); sweep folder {folder}"


def pairs_added(names: list[str]) -> str:
    """The configurations --pairs adds once the single knobs are read, announced before
    "config 4/4" runs after "3 configurations"."""
    s = "s" if len(names) > 1 else ""
    return f"kltui ablate: --pairs adds {len(names)} configuration{s} ({', '.join(names)})"


__all__ = [
    "INTERRUPTED_LINE",
    "PAIRS_NONE_LINE",
    "head_line",
    "nothing_to_show",
    "helper_pick",
    "pairs_added",
    "run_line",
    "sweep_start",
    "verdict_entry",
]
