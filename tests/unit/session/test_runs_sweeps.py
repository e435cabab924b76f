"""`kltui runs` lists the sweep folders of `kltui ablate` beside the recordings, each with its
configurations and how they ended; `kltui replay` with no FILE opens the newest of either, and
`kltui replay FOLDER` reads a sweep folder as `kltui ablate --replay` does (issue 29)."""

from __future__ import annotations

import io
import os
import shutil
import time
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from kltui.ablate.plan import Config
from kltui.ablate.sweep import FAILED, Sweep
from kltui.cli import main
from kltui.outputs.ablation import finish
from kltui.readings.ablation_kinds import VerdictKind
from kltui.readings.ablation_outcome import reading
from kltui.run.sweep_manifest import load
from kltui.session import runs as runs_mod
from kltui.words.ablation import verdict_line
from kltui.words.runs import (
    SWEEPS_HEAD,
    listed,
    opened_newest,
    pruned,
    pruned_entry,
    sweep_table,
)
from tests.unit.session.test_runs import make_runs

SWEEP = Path(__file__).parents[2] / "tui" / "data" / "sweep"  # a real reference-server sweep


@pytest.fixture
def folder(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("KLTUI_RUNS_DIR", str(d))
    monkeypatch.delenv("KLTUI_RUNS_KEEP", raising=False)
    return d


def unwrapped(text: str) -> str:
    """Text as one line, its whitespace collapsed: a line the console or a widget wrapped
    compares with the line it was given."""
    return " ".join(text.split())


def copy_sweep(folder: Path, name: str, created: float, **manifest) -> Path:
    """The committed sweep folder under `name`, its manifest's `created` (and more) set."""
    out = folder / name
    shutil.copytree(SWEEP, out)
    doc = orjson.loads((out / "ablation.json").read_bytes())
    doc.update(created=created, **manifest)
    (out / "ablation.json").write_bytes(orjson.dumps(doc))
    return out


def test_runs_lists_sweep_folders_with_their_configurations(folder, capsys):
    paths = make_runs(folder)  # recordings of 2026-01-01 .. 03
    new = copy_sweep(folder, "ablate-new", 1767225600.0 + 5 * 86400, verdict={"kind": "localized"})
    old = copy_sweep(folder, "ablate-old", 1767225600.0)  # written before manifests said it
    (folder / "dumps").mkdir()  # a folder that is not a sweep is not listed
    assert main(["runs"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert [ln.rsplit(" ", 1)[1] for ln in lines[1:4]] == [paths[2], paths[1], paths[0]]
    at = lines.index(SWEEPS_HEAD)
    found = runs_mod.list_sweeps(folder)
    assert [(s.path, s.mode, s.verdict) for s in found] == [
        (new, "launch", "localized"),
        (old, "launch", "done"),
    ]
    assert found[0].configs == (
        ("base", "measured", None),
        ("deterministic=on", "measured", None),
        ("cuda-graph=off", "measured", None),
        ("page-size=0", "failed", "exited"),
    )
    assert lines[at + 1 :] == sweep_table(found)
    listing = runs_mod.list_runs(folder), runs_mod.list_sweeps(folder)
    total = sum(r.size for r in listing[0]) + sum(s.size for s in listing[1])
    assert (len(listing[0]), len(listing[1])) == (3, 2)
    assert out.err.strip() == listed(3, 2, total, str(folder))


def test_a_sweep_killed_mid_way_lists_as_unfinished_and_one_interrupted_says_so(folder):
    copy_sweep(folder, "ablate-a", 10.0, timing={"total_s": None})
    copy_sweep(folder, "ablate-b", 20.0, interrupted=True)
    b, a = runs_mod.list_sweeps(folder)
    assert (a.verdict, b.verdict) == ("unfinished", "interrupted")
    (folder / "ablate-a" / "ablation.json").write_text("{ cut")  # half written: not listed
    assert [s.path.name for s in runs_mod.list_sweeps(folder)] == ["ablate-b"]


def test_a_finished_sweep_writes_its_verdict_into_the_manifest(tmp_path):
    sweep = Sweep(tmp_path, "launch")
    sweep.add([Config("base"), Config("tp=2", {"tp": "2"})])
    sweep.runs[0].failed("base: exited with code 1 before it was healthy", "exited")
    assert sweep.runs[0].status == FAILED
    finish(Console(file=io.StringIO()), sweep, live=True)  # a live sweep's end
    doc = orjson.loads((tmp_path / "ablation.json").read_bytes())
    assert doc["verdict"]["kind"] == "inconclusive" and doc["verdict"]["exit_code"] == 3
    assert runs_mod.inspect_sweep(tmp_path).verdict == "inconclusive"


def test_replay_without_a_file_opens_the_newest_sweep_folder(folder, capsys):
    make_runs(folder)
    new = copy_sweep(folder, "ablate-new", 1767225600.0 + 5 * 86400)
    assert main(["replay", "--headless"]) == 0  # localized: the sweep's own exit code
    out = capsys.readouterr()
    assert opened_newest(str(new), is_sweep=True) in out.err.splitlines()
    ab = reading(load(new))
    assert ab.verdict.kind == VerdictKind.LOCALIZED
    assert [hv.sufficient for hv in ab.verdict.helpers] == [("deterministic=on",)] * 3
    # the replay prints the sweep's own verdict (wrapped to the console's width)
    assert unwrapped(verdict_line(ab)) in unwrapped(out.out)
    # an older sweep than the newest recording: the recording is the newest
    shutil.rmtree(new)
    copy_sweep(folder, "ablate-old", 1.0)
    assert main(["replay", "--headless"]) == 3
    assert "newest recording " in capsys.readouterr().err


def test_replay_of_a_folder_that_is_not_a_sweep_is_one_line(folder, capsys):
    (folder / "empty").mkdir()
    assert main(["replay", "--headless", str(folder / "empty")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("ablation.json: no sweep manifest (is this a kltui ablate folder?)")
    assert "\n" not in err


def _age(path: Path, days: float) -> None:
    """Every file of a sweep folder (and the folder) last written `days` ago."""
    t = time.time() - days * 86400
    for p in [*path.iterdir(), path]:
        os.utime(p, (t, t))


def test_prune_weighs_a_sweep_folder_as_one_entry_and_removes_it_whole(folder, capsys):
    # it pruned recordings only, so sweeps (server logs and a recording per configuration)
    # piled up under --keep (issue 29)
    paths = make_runs(folder)  # 2026-01-01 .. 03
    old = copy_sweep(folder, "ablate-old", 1767225600.0 - 86400, verdict={"kind": "localized"})
    new = copy_sweep(folder, "ablate-new", 1767225600.0 + 5 * 86400, verdict={"kind": "reduced"})
    picked, errors, others = runs_mod.prune(folder, keep=3, older_than_days=None, dry_run=True)
    assert [(e.path, e.kind) for e in picked] == [(Path(paths[0]), "recording"), (old, "sweep")]
    assert main(["runs", "--prune", "--keep", "3", "--dry-run"]) == 0
    out = capsys.readouterr()
    assert old.is_dir() and out.out.splitlines() == [pruned_entry(e, True) for e in picked]
    assert out.err.splitlines() == [pruned(picked, others, dry_run=True)]
    assert main(["runs", "--prune", "--keep", "3"]) == 0
    assert not old.exists() and new.is_dir()
    assert [os.path.exists(p) for p in paths] == [False, True, True]


def test_prune_older_than_reads_a_sweep_folders_newest_file(folder):
    sweep = copy_sweep(folder, "ablate-a", 1767225600.0, verdict={"kind": "localized"})
    _age(sweep, 40)
    os.utime(next(sweep.glob("*.kltui.jsonl")))  # one configuration written just now
    assert main(["runs", "--prune", "--older-than", "30"]) == 0
    assert sweep.is_dir()
    _age(sweep, 40)
    assert main(["runs", "--prune", "--older-than", "30"]) == 0
    assert not sweep.exists()


def test_prune_never_removes_a_sweep_still_running(folder):
    # a sweep without a verdict or total time is unfinished; written to a minute ago, it may
    # be running now: not even --keep 1 below it removes it
    running = copy_sweep(folder, "ablate-running", 1767225600.0, verdict=None, timing={})
    copy_sweep(folder, "ablate-newer", 1767225600.0 + 86400, verdict={"kind": "localized"})
    assert runs_mod.inspect_sweep(running).verdict == "unfinished"
    assert main(["runs", "--prune", "--keep", "1"]) == 0
    assert running.is_dir()
    _age(running, 1)  # killed a day ago: an old unfinished sweep goes
    assert main(["runs", "--prune", "--keep", "1"]) == 0
    assert not running.exists()


def test_prune_leaves_other_users_entries_alone(folder, capsys, monkeypatch):
    paths = make_runs(folder)
    sweep = copy_sweep(folder, "ablate-x", 1767225600.0 - 86400, verdict={"kind": "localized"})
    # everything here is someone else's: recordings by their header, the sweep by its owner
    monkeypatch.setattr(runs_mod, "current_user", lambda: "someone-else")
    picked, _errors, others = runs_mod.prune(folder, keep=1, older_than_days=None, dry_run=True)
    assert picked == [] and others == 4
    assert main(["runs", "--prune", "--keep", "1"]) == 0
    assert all(os.path.exists(p) for p in paths) and sweep.is_dir()
    assert capsys.readouterr().err.splitlines() == [pruned([], 4, dry_run=False)]
