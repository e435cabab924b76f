"""`kltui runs` and retention in words (`words/runs.py`): one golden line each for a pruned
entry, a prune's total, what KLTUI_RUNS_KEEP removed, the listing's heading and total, and
what `kltui replay` opened; tests/unit/session assert the entries and these functions' output."""

from __future__ import annotations

import time
from pathlib import Path

from kltui.session.runs import Entry, EntryKind, SweepFolder
from kltui.words.runs import (
    SWEEPS_HEAD,
    auto_pruned,
    listed,
    opened_newest,
    pruned,
    pruned_entry,
    removed_counts,
    sweep_table,
)

REC = Entry(Path("/runs/run-1.kltui.jsonl"), 1.0, 1.0, 2048, "pass", EntryKind.RECORDING)
SWEEP = Entry(Path("/runs/ablate-a"), 1.0, 1.0, 3 * 1024 * 1024, "localized", EntryKind.SWEEP)


def test_what_a_prune_removes():
    assert pruned_entry(REC, dry_run=False) == "removed /runs/run-1.kltui.jsonl (2.0 KB)"
    assert pruned_entry(SWEEP, dry_run=True) == "would remove sweep folder /runs/ablate-a (3.0 MB)"
    assert pruned([REC, SWEEP], 0, dry_run=True) == (
        "would remove 1 recording(s) and 1 sweep folder(s), 3.0 MB"
    )
    assert (
        pruned([], 4, dry_run=False) == "removed 0 recording(s), 0 B; 4 of other users left alone"
    )
    assert removed_counts([REC, REC], old=True) == "2 old recording(s)"
    assert auto_pruned([REC, REC], 2) == "kltui: removed 2 old recording(s) (KLTUI_RUNS_KEEP=2)"


def test_the_listing_and_what_replay_opened():
    assert SWEEPS_HEAD == "sweep folders (kltui ablate; kltui replay FOLDER opens one):"
    assert listed(3, 2, 5 * 1024, "/runs") == "3 recording(s), 2 sweep folder(s), 5.0 KB in /runs"
    assert listed(1, 0, 0, "/runs") == "1 recording(s), 0 B in /runs"
    assert opened_newest("/runs/ablate-a", is_sweep=True) == (
        "kltui replay: newest sweep folder /runs/ablate-a"
    )
    assert opened_newest("/runs/r.kltui.jsonl", is_sweep=False) == (
        "kltui replay: newest recording /runs/r.kltui.jsonl"
    )


def test_a_sweep_folder_as_listed(monkeypatch):
    configs = (("base", "measured", None), ("page-size=0", "failed", "exited"))
    folder = SweepFolder(Path("/runs/ablate-a"), 1767225600.0, 1.0, 4096, "launch", configs, "done")
    monkeypatch.setenv("TZ", "UTC")  # the date is local time
    time.tzset()
    try:
        table = sweep_table([folder])
    finally:
        monkeypatch.undo()
        time.tzset()
    assert table == [
        "2026-01-01 00:00:00  ablate launch, 2 configurations  done  4.0 KB  /runs/ablate-a",
        "    base measured · page-size=0 failed (exited)",
    ]
