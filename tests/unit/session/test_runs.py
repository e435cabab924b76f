"""Past runs: `kltui runs` lists recordings newest first, `kltui replay` with no file opens the
newest, and retention (`runs --prune`, KLTUI_RUNS_KEEP) removes only old kltui recordings."""

from __future__ import annotations

import argparse
import io
import os
import time
from pathlib import Path

import orjson
import pytest

from kltui.cli import main
from kltui.cli.options import record_path
from kltui.session import runs as runs_mod
from kltui.words.runs import auto_pruned
from tests.reports.synth import HelperSpec, record, run_events, server

A = "http://127.0.0.1:30001"
B = "http://127.0.0.1:30002"
JAN_1_2026 = 1767225600.0  # 2026-01-01 00:00:00 UTC


@pytest.fixture
def folder(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("KLTUI_RUNS_DIR", str(d))
    monkeypatch.delenv("KLTUI_RUNS_KEEP", raising=False)
    return d


def make_runs(d):
    """Three recordings, oldest first: a pass on A, a fail on A+B, one cut short on B."""
    passed = run_events([HelperSpec("match")], servers=[server(A)], verdict="pass")
    failed = run_events(
        [HelperSpec("match", noise=3e-2)], servers=[server(A), server(B)], verdict="fail"
    )
    cut = run_events([HelperSpec("match")], servers=[server(B)], verdict=None)
    paths = []
    for i, evs in enumerate((passed, failed, cut)):
        path = record(d / f"run-2026010{i + 1}-000000-1.kltui.jsonl", evs)
        # the header's `created` orders them: the day in the file's name, not the clock's
        # reading a moment apart
        stamp(path, JAN_1_2026 + i * 86400)
        paths.append(path)
    return paths


def stamp(path: str, created: float) -> None:
    """Set a recording header's `created`."""
    head, rest = Path(path).read_bytes().split(b"\n", 1)
    header = orjson.loads(head)
    header["created"] = created
    Path(path).write_bytes(orjson.dumps(header) + b"\n" + rest)


def test_runs_lists_newest_first_with_servers_verdict_and_size(folder, capsys, monkeypatch):
    # small windows, so the head/tail reading of large files is what runs here
    monkeypatch.setattr(runs_mod, "HEAD_BYTES", 4096)
    monkeypatch.setattr(runs_mod, "TAIL_BYTES", 4096)
    paths = make_runs(folder)
    (folder / "notes.kltui.jsonl").write_text("not a recording\n")
    assert os.path.getsize(paths[1]) > 3 * 4096
    assert main(["runs"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0].split() == [
        "date",
        "by",
        "(user@host:folder)",
        "servers",
        "verdict",
        "size",
        "path",
    ]
    body = lines[1:]
    assert [ln.rsplit(" ", 1)[1] for ln in body[:3]] == [paths[2], paths[1], paths[0]]
    assert B in body[0] and "unfinished" in body[0]
    assert f"{A}, {B}" in body[1] and " fail " in body[1]
    assert A in body[2] and " pass " in body[2]
    assert "not a recording" in body[3]
    size = runs_mod.human_size(os.path.getsize(paths[1]))
    assert size.endswith("KB") and size in body[1]
    assert "4 recording(s)" in out.err


def test_replay_without_a_file_opens_the_newest_recording(folder, capsys):
    paths = make_runs(folder)
    assert main(["replay", "--headless"]) == 3  # the newest one was cut short: no verdict
    err = capsys.readouterr().err
    assert f"newest recording {paths[2]}" in err


@pytest.mark.parametrize(
    ("verdicts", "code"),
    [
        (["pass"], 0),
        (["fail"], 1),
        (["error"], 3),
        (["interrupted"], 130),
        ([None], 3),  # cut short before its verdict
        (["pass", "fail", "pass"], 1),  # --repeat: the worst run's, as `check` exited
        (["fail", "error"], 3),
    ],
)
def test_replay_headless_exits_as_check_did_for_the_recorded_verdicts(
    tmp_path, capsys, verdicts, code
):
    events = []
    for v in verdicts:
        events += run_events([HelperSpec("match")], servers=[server(A)], verdict=v)
    path = record(tmp_path / "r.kltui.jsonl", events)
    assert main(["replay", "--headless", path]) == code
    assert capsys.readouterr().out.count("kltui results") == len(verdicts)


def test_console_results_group_rows_by_server_in_the_order_given():
    from rich.console import Console

    from kltui.outputs.check_tables import results_table
    from kltui.session.store import SessionStore

    # --concurrency 2: the servers' helpers started interleaved, B's first
    specs = [HelperSpec(h, server=u) for h in ("match", "prefill_cache_hit") for u in (B, A)]
    store = SessionStore()
    for ev in run_events(specs, servers=[server(A), server(B)], verdict="pass"):
        store.apply(ev)
    assert [st.key for st in store.by_server()] == [
        f"match@{A}",
        f"prefill_cache_hit@{A}",
        f"match@{B}",
        f"prefill_cache_hit@{B}",
    ]
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(results_table(store))
    rows = [line.split()[1] for line in out.getvalue().splitlines() if "@http" in line]
    assert rows == [st.key for st in store.by_server()]


def test_tui_helpers_panel_groups_rows_by_server_as_the_console_does():
    from kltui.session.store import SessionStore
    from kltui.tui.widgets.progress import shown_states

    specs = [HelperSpec(h, server=u) for h in ("match", "prefill_cache_hit") for u in (B, A)]
    store = SessionStore()
    for ev in run_events(specs, servers=[server(A), server(B)], verdict="pass"):
        store.apply(ev)
    states, hidden = shown_states(store, None)
    assert [st.key for st in states] == [
        f"match@{A}",
        f"prefill_cache_hit@{A}",
        f"match@{B}",
        f"prefill_cache_hit@{B}",
    ]
    assert hidden == (0, 0)


def test_replay_without_recordings_is_one_line_and_exit_2(folder, capsys):
    assert main(["replay", "--headless"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"kltui: error: no recordings in {folder} ($KLTUI_RUNS_DIR moves it); "
        "run kltui first or give FILE"
    )


def test_prune_keeps_the_newest_and_never_touches_other_files(folder, capsys):
    paths = make_runs(folder)
    other = folder / "notes.kltui.jsonl"
    other.write_text("not a recording\n")
    assert main(["runs", "--prune"]) == 2  # says which limit it needs
    assert main(["runs", "--prune", "--keep", "1", "--dry-run"]) == 0
    assert all(os.path.exists(p) for p in paths)
    assert main(["runs", "--prune", "--keep", "1"]) == 0
    out = capsys.readouterr().out
    assert f"removed {paths[0]}" in out and f"removed {paths[1]}" in out
    assert sorted(os.listdir(folder)) == sorted([os.path.basename(paths[2]), other.name])


def test_prune_older_than_days_uses_the_last_write(folder):
    paths = make_runs(folder)
    month_ago = time.time() - 31 * 86400
    os.utime(paths[0], (month_ago, month_ago))
    assert main(["runs", "--prune", "--older-than", "30d"]) == 0
    assert [os.path.exists(p) for p in paths] == [False, True, True]


def test_keep_setting_prunes_when_a_run_is_recorded(folder, monkeypatch, capsys):
    paths = make_runs(folder)
    monkeypatch.setenv("KLTUI_RUNS_KEEP", "2")
    picked, _errors, _others = runs_mod.prune(folder, keep=1, older_than_days=None, dry_run=True)
    assert sorted(str(e.path) for e in picked) == [str(p) for p in paths[:2]]
    new = record_path(argparse.Namespace())
    assert new.startswith(str(folder))
    # the new run will be the second of two: only the newest old one stays
    assert [os.path.exists(p) for p in paths] == [False, False, True]
    assert auto_pruned(picked, 2) in capsys.readouterr().err.splitlines()
    monkeypatch.setenv("KLTUI_RUNS_KEEP", "many")
    assert main(["check", "--server", "127.0.0.1:9"]) == 2
    assert "KLTUI_RUNS_KEEP='many': must be a positive integer" in capsys.readouterr().err
