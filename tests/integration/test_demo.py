"""`kltui demo` end to end: the embedded server runs the helpers and never outlives kltui."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kltui.words.no_dashboard import NoDashboard, no_dashboard_note
from tests.json_contract import read_check


def children_of(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_demo_outside_a_terminal_runs_headless_and_ends(tmp_path):
    # issue 46: README's first command with its output going to a file drew the dashboard into
    # it and waited for `q` forever; outside a terminal it is the console run and its exit code
    # (the same rule as --headless: kltui/cli/terminal.py)
    log = tmp_path / "out.txt"
    with log.open("w") as stdout:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "kltui",
                "demo",
                "--deterministic",
                "--samples",
                "4",
                "--max-new-tokens",
                "16",
                "--json",
                str(tmp_path / "r.json"),
                "--record",
                str(tmp_path / "r.jsonl"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    text = log.read_text()
    assert out.returncode == 0, text + out.stderr
    assert no_dashboard_note("kltui demo", NoDashboard.NOT_A_TERMINAL) + "\n" in out.stderr
    assert "verdict: pass" in text and "\x1b[?1049h" not in text  # no alternate screen
    assert "Traceback" not in out.stderr
    assert (tmp_path / "r.jsonl").stat().st_size > 0
    assert read_check(tmp_path / "r.json")["verdict"] == "pass"


def test_bare_kltui_outside_a_terminal_runs_headless(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True)
    out = subprocess.run(
        [sys.executable, "-m", "kltui", "--server", url, "--samples", "4"]
        + ["--max-new-tokens", "8", "--helpers", "match", "--no-record"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert no_dashboard_note("kltui", NoDashboard.NOT_A_TERMINAL) + "\n" in out.stderr
    assert "verdict: pass" in out.stdout


def test_interrupted_demo_stops_its_reference_server(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kltui",
            "demo",
            "--headless",
            "--samples",
            "8",
            "--max-new-tokens",
            "1500",
            "--max-prompt-tokens",
            "32",
            "--helpers",
            "match",
            "--record",
            str(tmp_path / "r.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        kids: list[int] = []
        # wait until decoding is under way (the recording holds a TokensDecoded event)
        while time.monotonic() < deadline:
            rec = tmp_path / "r.jsonl"
            if rec.exists() and b"TokensDecoded" in rec.read_bytes():
                kids = children_of(proc.pid)
                break
            time.sleep(0.2)
        assert kids, "the demo never started decoding"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in err
    deadline = time.monotonic() + 15
    while any(alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(k) for k in kids), "the reference server outlived kltui demo"
    assert b'"verdict":"interrupted"' in (tmp_path / "r.jsonl").read_bytes()
