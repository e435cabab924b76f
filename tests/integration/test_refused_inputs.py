"""Inputs that would make a run meaningless or lose its results are refused before any work:
exit 2, one stderr line naming the option, no traceback, and no connection made to the server
(a listening socket counts the connections: that, not a stopwatch, is what shows nothing ran;
the time bound only catches a hang, since a loaded CI machine took 1.46 s to import and refuse)."""

from __future__ import annotations

import os
import socket
import stat
import time

import pytest

from kltui.cli import main


@pytest.fixture
def listener():
    """A 127.0.0.1 port that listens and never answers; `.connected()` says if anyone came."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)

    class L:
        port = s.getsockname()[1]
        addr = f"127.0.0.1:{port}"

        @staticmethod
        def connected() -> bool:
            try:
                conn, _ = s.accept()
            except BlockingIOError:
                return False
            conn.close()
            return True

    yield L
    s.close()


def refused(argv: list[str], capsys, listener, must: str) -> str:
    t0 = time.monotonic()
    rc = main(argv)
    took = time.monotonic() - t0
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert rc == 2, out
    assert len(lines) == 1 and lines[0].startswith("kltui: error: "), out.err
    assert "Traceback" not in out.err + out.out
    assert must in lines[0], lines[0]
    assert took < 10.0, took
    assert not listener.connected()
    return lines[0]


def check(listener, tmp_path, *extra: str) -> list[str]:
    return ["check", "--server", listener.addr, "--no-record", "--request-timeout", "0.3", *extra]


def test_helpers_that_name_no_helper(listener, tmp_path, capsys):
    refused(check(listener, tmp_path, "--helpers", ","), capsys, listener, "--helpers ','")


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--threshold", "nan"),
        ("--threshold", "-1e-3"),
        ("--threshold", "-0.0001"),
        ("--threshold", "inf"),
        ("--tail-threshold", "nan"),
        ("--tail-threshold", "-0.5"),
    ],
)
def test_thresholds_that_no_verdict_can_meet(flag, value, listener, tmp_path, capsys):
    refused(check(listener, tmp_path, f"{flag}={value}"), capsys, listener, f"{flag} ")


@pytest.mark.parametrize("yaml_text, must", [
    ("threshold: .nan\n", "'threshold' must be a number >= 0 (0: bit-exact)"),
    ("threshold: -0.01\n", "'threshold' must be a number >= 0 (0: bit-exact)"),
    ("tail_threshold: .nan\n", "'tail_threshold' must be a positive number"),
    ("thresholds:\n  - model: '*'\n    kl_div: .nan\n", "'kl_div' must be a positive number"),
    ("helpers: []\n", "'helpers' names no helper"),
    ("helpers: ','\n", "'helpers' names no helper"),
])  # fmt: skip
def test_the_same_values_in_a_config_file(yaml_text, must, listener, tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml_text)
    line = refused(check(listener, tmp_path, "--config", str(cfg)), capsys, listener, must)
    assert str(cfg) in line


@pytest.mark.parametrize(
    "second",
    ["localhost:{port}", "127.0.0.1:{port}", "http://127.0.0.1:{port}/"],
)
def test_one_server_named_twice(second, listener, tmp_path, capsys):
    argv = ["check", "--server", listener.addr, "--server", second.format(port=listener.port)]
    line = refused([*argv, "--no-record"], capsys, listener, "name each server once")
    assert line.startswith("kltui: error: --server")


def test_one_server_named_twice_in_a_config_file(listener, tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"servers: [{listener.addr}, 'localhost:{listener.port}']\n")
    argv = ["check", "--config", str(cfg), "--no-record"]
    line = refused(argv, capsys, listener, "are the same server")
    assert f"{cfg}: servers" in line


def test_two_servers_on_other_ports_are_not_duplicates(listener, tmp_path, capsys):
    # reaching the second step (a missing prompt file) shows the duplicate check let them by
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    try:
        argv = [
            "check",
            "--server",
            listener.addr,
            "--server",
            f"localhost:{other.getsockname()[1]}",
        ]
        refused([*argv, "--no-record", "--prompts", str(tmp_path / "nope.txt")], capsys, listener,
                "nope.txt")  # fmt: skip
    finally:
        other.close()


@pytest.mark.parametrize("option", ["--json", "--html", "--md", "--junit", "--record"])
def test_an_output_into_a_missing_folder(option, listener, tmp_path, capsys):
    path = tmp_path / "missing" / "out.file"
    argv = ["check", "--server", listener.addr, option, str(path)]
    if option != "--record":
        argv.append("--no-record")
    refused(argv, capsys, listener, f"{option} {path}: no such directory")
    assert not path.parent.exists()


def test_an_output_that_is_a_folder(listener, tmp_path, capsys):
    argv = ["check", "--server", listener.addr, "--no-record", "--json", str(tmp_path)]
    refused(argv, capsys, listener, "is a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
@pytest.mark.parametrize("option", ["--json", "--record"])
def test_an_output_into_a_read_only_folder(option, listener, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        argv = ["check", "--server", listener.addr, option, str(ro / "out")]
        refused(argv, capsys, listener, "cannot write in")
    finally:
        ro.chmod(stat.S_IRWXU)


def test_demo_refuses_before_starting_its_server(listener, tmp_path, capsys):
    path = tmp_path / "missing" / "r.json"
    refused(["demo", "--headless", "--json", str(path)], capsys, listener, "no such directory")


def test_a_baseline_log_that_cannot_be_read(listener, tmp_path, capsys):
    gone = tmp_path / "vllm.log"
    argv = check(listener, tmp_path, "--baseline", "127.0.0.1:9", "--baseline-log", str(gone))
    line = refused(argv, capsys, listener, "--baseline-log: cannot read")
    assert str(gone) in line


def test_a_baseline_log_in_a_config_file_that_cannot_be_read(listener, tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"baseline: 127.0.0.1:9\nbaseline_log: {tmp_path / 'no.log'}\n")
    line = refused(check(listener, tmp_path, "--config", str(cfg)), capsys, listener, "cannot read")
    assert f"{cfg}: baseline_log" in line
