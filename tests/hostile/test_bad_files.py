"""Bad input files through the command line: one line on stderr naming the file, the line and
the fix, exit code 2, and nothing else done (no server contacted, nothing written).

Most cases call `kltui.cli.main` in this process (the real argument parsing and dispatch,
without an interpreter start per case); a few run `python -m kltui` as a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys

import orjson
import pytest

from kltui.cli import main
from kltui.session.recording import FORMAT, VERSION
from tests.hostile.catalogue import BAD_FILES, EXIT_USAGE, BadFile
from tests.hostile.harness import ROOT, cli_env
from tests.hostile.server import refused_url


def _argv(bad: BadFile, path, tmp_path) -> list[str]:
    # a server nobody listens on: reaching it would be exit 3, not the 2 a bad file must give
    return [
        "check",
        "--server",
        refused_url().removeprefix("http://"),
        bad.option,
        str(path),
        "--json",
        str(tmp_path / "r.json"),
        "--record",
        str(tmp_path / "r.kltui.jsonl"),
    ]


def _assert_one_line(stderr: str, stdout: str, bad: BadFile, path, tmp_path) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"kltui: error: {path}"), lines[0]
    assert re.search(bad.message, lines[0]), lines[0]
    assert stdout == ""
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "r.kltui.jsonl").exists()


@pytest.mark.parametrize("bad", BAD_FILES, ids=[b.id for b in BAD_FILES])
def test_bad_file(bad: BadFile, tmp_path, capsys):
    path = tmp_path / bad.name
    path.write_bytes(bad.content)
    rc = main(_argv(bad, path, tmp_path))
    out = capsys.readouterr()
    assert rc == EXIT_USAGE, out
    _assert_one_line(out.err, out.out, bad, path, tmp_path)


@pytest.mark.parametrize("case_id", ["yaml-unknown-key", "prompts-jsonl-as-json"])
def test_bad_file_through_a_subprocess(case_id, tmp_path):
    bad = next(b for b in BAD_FILES if b.id == case_id)
    path = tmp_path / bad.name
    path.write_bytes(bad.content)
    proc = subprocess.run(
        [sys.executable, "-m", "kltui", *_argv(bad, path, tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=cli_env(),
    )
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert "Traceback" not in proc.stderr
    _assert_one_line(proc.stderr, proc.stdout, bad, path, tmp_path)


def test_missing_file_is_named(tmp_path, capsys):
    path = tmp_path / "nope.txt"
    rc = main(["check", "--server", "127.0.0.1:9", "--prompts", str(path)])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and err.strip() == f"kltui: error: {path}: file not found"


def test_recording_from_a_newer_version_through_the_cli(tmp_path, capsys):
    """`kltui report` on a recording of a newer format: exit 2, one stderr line naming the file,
    line 1 and the fix, no report written (tests/reports/test_report_cli.py checks the message
    of report() itself; this is the whole command line, main() and its exit code)."""
    path = tmp_path / "new.kltui.jsonl"
    header = {"format": FORMAT, "version": VERSION + 1, "kltui_version": "9.9"}
    path.write_bytes(orjson.dumps(header) + b"\n")
    rc = main(["report", str(path), "--json", str(tmp_path / "out.json")])
    err = capsys.readouterr().err.strip()
    assert rc == EXIT_USAGE, err
    assert err.startswith(f"kltui: error: {path}:1: recording format version {VERSION + 1}")
    assert "upgrade kltui" in err and "\n" not in err
    assert not (tmp_path / "out.json").exists()
