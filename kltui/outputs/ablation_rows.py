"""`kltui ablate`'s result as plain text, the same for every medium (the console, Markdown,
JUnit, HTML each escape it): the table's rows of configurations x helpers, the lines after it,
why --pairs ran nothing, what --stress found across the configurations, and the time split."""

from __future__ import annotations

from kltui.ablate.sweep import ConfigRun, Sweep, Timing
from kltui.readings.ablation import Ablation
from kltui.readings.ablation_outcome import pairs_ran_none
from kltui.readings.ablation_stress import read_stress
from kltui.words.ablation import lines
from kltui.words.ablation_config import cell, condition_cell
from kltui.words.ablation_note import note
from kltui.words.ablation_stress import stress_line
from kltui.words.ablation_sweep import PAIRS_NONE_LINE
from kltui.words.chain import doc_lines


def helper_names(ab: Ablation) -> list[str]:
    """The helpers of the table's columns: the base's, then any other configuration ran."""
    out = [h.helper for h in ab.base.helpers]
    for c in ab.configs:
        out += [h.helper for h in c.helpers if h.helper not in out]
    return out


def configs_by_name(sweep: Sweep) -> dict[str, ConfigRun]:
    """The sweep's configuration runs, by name."""
    return {r.name: r for r in sweep.runs}


def stress_lines(sweep: Sweep) -> list[str]:
    """What --stress found across the configurations (`readings/ablation_stress.py`), beside
    the quiet verdict; none without --stress."""
    found = read_stress(sweep)
    return [] if found is None else [stress_line(found)]


def rows(sweep: Sweep, ab: Ablation) -> list[tuple[str, list[str], str, str]]:
    """(configuration, one cell per helper, condition, note) for every configuration, base
    first, as plain text (each medium escapes it)."""
    runs = configs_by_name(sweep)
    names = helper_names(ab)
    out = []
    for c in (ab.base, *ab.configs):
        cells = []
        for h in names:
            r = c.helper(h)
            cells.append("–" if r is None else cell(r))
        out.append((c.config.name, cells, condition_cell(c), note(c, runs.get(c.config.name))))
    return out


def tail_lines(ab: Ablation) -> list[str]:
    """What follows the table: the traps, the notes, the verdict and the next step
    (`Ablation.lines` after its one line per configuration, which the table replaces)."""
    return lines(ab)[len(ab.configs) + 1 :]


def pairs_line(sweep: Sweep) -> str | None:
    """Why --pairs ran nothing (None when it ran, or was not asked for)."""
    return PAIRS_NONE_LINE if pairs_ran_none(sweep) else None


def timing_line(sweep: Sweep, t: Timing) -> str:
    """Where the sweep's time went (`SweepOutcome.timing`), then its chain's."""

    def s(x: float | None) -> str:
        return "–" if x is None else f"{x:.1f} s"

    share = t.kltui_share
    pct = "" if share is None else f" ({share * 100:.2f}%)"
    line = (
        f"time {s(t.total_s)}: server starts {s(t.start_s)}, helper runs {s(t.run_s)}, "
        f"server stops {s(t.stop_s)}, --help {s(t.help_s)}, kltui "
        f"{'–' if t.kltui_s is None else format(t.kltui_s, '.2f') + ' s'}{pct}"
    )
    ct = (sweep.chain or {}).get("timing")
    if isinstance(ct, dict) and isinstance(ct.get("total_s"), int | float):
        parts = [
            f"{name} {ct[key]:.1f} s"
            for key, name in _CHAIN_STEPS
            if isinstance(ct.get(key), int | float)
        ]
        line += f"; then the chain {ct['total_s']:.1f} s ({', '.join(parts)})"
    return line


# the chain's steps as its timing names them (kltui/dumps/chain.py)
_CHAIN_STEPS = (
    ("relaunch_s", "relaunch"),
    ("match_s", "match"),
    ("dumps_s", "dumps capture and analysis"),
    ("stop_s", "stop"),
    ("probe_s", "op probe"),
)


def chain_lines(sweep: Sweep) -> list[str]:
    """`--chain`'s lines: setting -> module -> op probe, then how it ended (none: not asked)."""
    return doc_lines(sweep.chain)
