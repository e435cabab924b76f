"""`kltui runs` and retention in words (`session/runs.py` lists and prunes): what a prune
removed or would remove, the listing's sweep heading and totals, what `kltui replay` opened
when given no file."""

from __future__ import annotations

import time

from kltui.session.runs import Entry, EntryKind, SweepFolder, human_size

SWEEPS_HEAD = "sweep folders (kltui ablate; kltui replay FOLDER opens one):"


def sweep_table(sweeps: list[SweepFolder], clean=str) -> list[str]:
    """A line per sweep folder (date, mode and configurations, verdict, size, path), then its
    configurations and how each ended; `clean` makes manifest strings safe to print."""
    out = []
    for s in sweeps:
        date = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.created))
        what = f"ablate {clean(s.mode)}, {len(s.configs)} configurations"
        out.append("  ".join([date, what, clean(s.verdict), human_size(s.size), clean(s.path)]))
        parts = [
            f"{clean(name)} {clean(status)}" + (f" ({clean(kind)})" if kind else "")
            for name, status, kind in s.configs
        ]
        out.append("    " + " · ".join(parts))
    return out


def removed_counts(removed: list[Entry], old: bool = False) -> str:
    """How many recordings (`old`: "old recordings") and sweep folders `removed` holds."""
    sweeps = sum(1 for r in removed if r.kind == EntryKind.SWEEP)
    also = f" and {sweeps} sweep folder(s)" if sweeps else ""
    return f"{len(removed) - sweeps} {'old ' if old else ''}recording(s){also}"


def _verb(dry_run: bool) -> str:
    return "would remove" if dry_run else "removed"


def pruned_entry(r: Entry, dry_run: bool, clean=str) -> str:
    """One entry a prune removes (or, `dry_run`, would remove); `clean` makes its path safe."""
    what = "sweep folder " if r.kind == EntryKind.SWEEP else ""
    return f"{_verb(dry_run)} {what}{clean(r.path)} ({human_size(r.size)})"


def pruned(removed: list[Entry], others: int, dry_run: bool) -> str:
    """A prune's total: what it removed, the bytes, the other users' entries left alone."""
    freed = human_size(sum(r.size for r in removed))
    left = f"; {others} of other users left alone" if others else ""
    return f"{_verb(dry_run)} {removed_counts(removed)}, {freed}{left}"


def auto_pruned(removed: list[Entry], keep: int) -> str:
    """What `KLTUI_RUNS_KEEP` removed before a run."""
    return f"kltui: removed {removed_counts(removed, old=True)} (KLTUI_RUNS_KEEP={keep})"


def listed(runs: int, sweeps: int, size: int, folder: str) -> str:
    """The listing's total: recordings, sweep folders, their bytes, the folder."""
    also = f", {sweeps} sweep folder(s)" if sweeps else ""
    return f"{runs} recording(s){also}, {human_size(size)} in {folder}"


def opened_newest(path: str, is_sweep: bool) -> str:
    """What `kltui replay` without a file opened."""
    return f"kltui replay: newest {'sweep folder' if is_sweep else 'recording'} {path}"
