"""`kltui ablate`'s result as plain text, the same for every medium (the console, Markdown,
JUnit, HTML each escape it): the table's rows of configurations x helpers, the lines after it,
why --pairs ran nothing and what --stress found across the configurations (the time split:
words/ablation_timing.py)."""

from __future__ import annotations

from kltui.ablate.sweep import ConfigRun, Sweep
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


def chain_lines(sweep: Sweep) -> list[str]:
    """`--chain`'s lines: setting -> module -> op probe, then how it ended (none: not asked)."""
    return doc_lines(sweep.chain)
