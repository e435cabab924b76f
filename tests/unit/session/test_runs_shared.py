"""A runs folder several users write to (issue 33 item 8): `kltui runs` says whose run each
recording is (user, host, folder: the recording header's), and "the newest recording" of
`kltui replay` and `kltui web replay` is this user's newest, never another user's."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import orjson
import pytest

from kltui.cli import main
from kltui.session import runs as runs_mod
from kltui.session.recording import Recorder, current_user, read_recording
from tests.reports.synth import HelperSpec, record, run_events, server
from tests.unit.session.test_runs import JAN_1_2026, stamp

A = "http://127.0.0.1:30001"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("KLTUI_RUNS_DIR", str(d))
    monkeypatch.delenv("KLTUI_RUNS_KEEP", raising=False)
    return d


def recorded(d: Path, name: str, day: int, **header) -> str:
    """A recording made on day `day` of 2026, its header's user/host/cwd set as given."""
    path = record(d / name, run_events([HelperSpec("match")], servers=[server(A)], verdict="pass"))
    stamp(path, JAN_1_2026 + day * 86400)
    head, rest = Path(path).read_bytes().split(b"\n", 1)
    h = orjson.loads(head)
    for k, v in header.items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    Path(path).write_bytes(orjson.dumps(h) + b"\n" + rest)
    return path


def test_a_recording_header_says_who_recorded_it_where(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rec = Recorder(tmp_path / "r.kltui.jsonl")
    rec.close()
    header = read_recording(str(tmp_path / "r.kltui.jsonl")).header
    assert header["user"] == current_user() != "?"
    assert header["host"] == socket.gethostname()
    assert header["cwd"] == os.getcwd() == str(tmp_path)


def test_runs_says_whose_run_each_is(folder, capsys):
    me = current_user()
    mine = recorded(folder, "run-a.kltui.jsonl", 1, user=me, host="box1", cwd="/srv/mine")
    theirs = recorded(folder, "run-b.kltui.jsonl", 2, user="alice", host="labhost", cwd="/w/a")
    # a recording from before kltui wrote user/host/cwd: its file's owner stands for the user
    old = recorded(folder, "run-c.kltui.jsonl", 0, user=None, host=None, cwd=None)
    assert main(["runs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "by (user@host:folder)" in lines[0]
    rows = {ln.rsplit(" ", 1)[1]: ln for ln in lines[1:]}
    assert "alice@labhost:/w/a " in rows[theirs]
    assert f"{me}@box1:/srv/mine " in rows[mine]
    owner = runs_mod._owner(os.stat(old))
    assert f"{owner}@?:? " in rows[old]


def test_the_newest_recording_is_this_users_newest(folder, capsys):
    me = current_user()
    mine = recorded(folder, "run-a.kltui.jsonl", 1, user=me, host="box1", cwd="/srv")
    recorded(folder, "run-b.kltui.jsonl", 2, user="alice", host="labhost", cwd="/w/a")
    assert runs_mod.newest(folder) == Path(mine)
    assert runs_mod.newest_entry(folder) == Path(mine)
    assert main(["replay", "--headless"]) == 0
    assert f"newest recording {mine}" in capsys.readouterr().err


def test_only_other_users_recordings_is_one_line_naming_them(folder, capsys):
    recorded(folder, "run-b.kltui.jsonl", 2, user="alice", host="labhost", cwd="/w/a")
    assert main(["replay", "--headless"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"no recordings of {current_user()} in {folder}; 1 of other users" in err, err
    assert "Traceback" not in err


def test_a_hostile_header_is_shown_literally(folder, capsys):
    recorded(folder, "run-x.kltui.jsonl", 1, user="ev\x1b[31mil", host="h\nx", cwd="/\x07")
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert len(out.splitlines()) == 2  # the header row and one run: no line break smuggled in
