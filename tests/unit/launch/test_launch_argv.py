"""kltui/launch without a server: the address put into a launch command, the log's tail, the
one-line error, and the watchdog file running on the bare standard library (issue 29)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kltui.launch.server import LaunchedServer, LaunchError, is_loopback, read_tail, with_address
from kltui.launch.supervisor import SCRIPT

P = 40123


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["srv"], ["srv", "--host", "127.0.0.1", "--port", str(P)]),
        (["srv", "--port", "30000", "-x"], ["srv", "--port", str(P), "-x", "--host", "127.0.0.1"]),
        (["srv", "--port=30000"], ["srv", f"--port={P}", "--host", "127.0.0.1"]),
        (
            ["srv", "--host", "0.0.0.0", "--port", "1", "--tp", "2"],
            ["srv", "--host", "127.0.0.1", "--port", str(P), "--tp", "2"],
        ),
        (["srv", "--host=::", "--port"], ["srv", "--host=127.0.0.1", "--port", str(P)]),
        # a flag without its value keeps the next option
        (
            ["srv", "--port", "--tp", "2"],
            ["srv", "--port", str(P), "--tp", "2", "--host", "127.0.0.1"],
        ),
        # only the exact flags: --port-base is another option
        (
            ["srv", "--port-base", "9"],
            ["srv", "--port-base", "9", "--host", "127.0.0.1", "--port", str(P)],
        ),
    ],
)
def test_the_launch_command_gets_kltuis_host_and_port(argv, expected):
    assert with_address(argv, "127.0.0.1", P) == expected


def test_loopback_only():
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.1", "::", "example.com", ""]))


async def test_a_host_beyond_this_machine_is_refused_before_anything_starts(tmp_path):
    srv = LaunchedServer(["true"], name="cfg-1", log_path=tmp_path / "l.log", host="0.0.0.0")
    with pytest.raises(LaunchError, match=r"^cfg-1: host '0.0.0.0' is not a loopback") as e:
        await srv.start()
    assert e.value.kind == "usage" and not (tmp_path / "l.log").exists()


async def test_an_empty_or_unknown_command_is_one_line(tmp_path):
    for argv, says in (([], "the launch command is empty"), (["no-such-cmd-x"], "not found")):
        srv = LaunchedServer(argv, name="base", log_path=tmp_path / "l.log")
        with pytest.raises(LaunchError, match=says) as e:
            await srv.start()
        assert "\n" not in str(e.value) and str(e.value).startswith("base: ")


def test_log_tail_skips_blank_lines_and_keeps_a_progress_bars_latest_state(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"one\n\n  two  \nLoading  10%\rLoading  60%\r\n\n")
    assert read_tail(log, 2) == ["two", "Loading  60%"]
    assert read_tail(log, 0) == [] and read_tail(tmp_path / "missing", 3) == []


def test_the_error_is_one_line_with_the_last_log_lines(tmp_path):
    err = LaunchError(
        "tp=2", "exited with code 1 before it was healthy", kind="exited",
        log_path=tmp_path / "x.log", tail=["a", "b", "c", "ValueError: bad --tp"], returncode=1,
    )  # fmt: skip
    assert str(err) == (
        f"tp=2: exited with code 1 before it was healthy; log {tmp_path / 'x.log'}: "
        "b | c | ValueError: bad --tp"
    )
    assert err.returncode == 1 and err.tail[-1] == "ValueError: bad --tp"


def test_the_watchdog_runs_on_the_bare_standard_library(tmp_path):
    """-I -S: no site-packages, no script folder, no environment: nothing of kltui importable."""
    log = tmp_path / "w.log"
    cmd = [sys.executable, "-c", "print('from the server'); raise SystemExit(4)"]
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(SCRIPT), "--status", "--log", str(log), "--", *cmd],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 4, out.stderr
    status = [json.loads(line) for line in out.stdout.splitlines()]
    assert [next(iter(s)) for s in status] == ["started", "exited", "stopped"]
    assert status[1] == {"exited": 4} and status[2] == {"stopped": True}
    assert "from the server" in log.read_text()


def test_the_watchdog_reports_a_command_it_cannot_start(tmp_path):
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(SCRIPT), "--status", "--quiet", "--", "no-such-cmd-x"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 127
    assert json.loads(out.stdout)["error"] == "not_found"
