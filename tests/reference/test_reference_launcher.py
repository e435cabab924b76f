"""ReferenceServer: readiness, clear failures, and a child that never outlives its parent."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kltui.reference.cli_entry import add_arguments
from kltui.reference.launcher import PACKAGE_ROOT, ReferenceServer, ReferenceServerError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has exited all the same.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_importing_the_launcher_does_not_import_torch() -> None:
    code = (
        "import sys, kltui.reference.launcher, kltui.reference.cli_entry;"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE_ROOT, check=True
    )
    assert out.stdout.strip() == "False"


def test_cli_arguments() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--port", "0", "--deterministic", "--fault", "window-evict"])
    assert args.port == 0 and args.deterministic and args.fault == "window-evict"
    assert args.host == "127.0.0.1" and args.page_size == 1 and args.api_key is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--fault", "bogus"])


def test_a_child_that_dies_early_is_reported_with_its_stderr(tmp_path) -> None:
    srv = ReferenceServer(checkpoint=tmp_path / "missing", startup_timeout=30)
    with pytest.raises(ReferenceServerError, match="exited with code 2") as info:
        srv.start()
    assert "no HF checkpoint" in str(info.value)


def test_ready_line_gives_url_and_port(default_server) -> None:
    assert default_server.url == f"http://127.0.0.1:{default_server.port}"
    assert default_server.host_port == f"127.0.0.1:{default_server.port}"
    assert 0 < default_server.startup_seconds < 30


@pytest.mark.parametrize("from_thread", [False, True], ids=["main-thread", "worker-thread"])
def test_the_server_exits_when_its_parent_is_killed(from_thread: bool) -> None:
    parent = textwrap.dedent(
        f"""
        import sys, threading, time
        from kltui.reference.launcher import ReferenceServer
        srv = ReferenceServer()
        if {from_thread}:
            t = threading.Thread(target=srv.start); t.start(); t.join()
        else:
            srv.start()
        print(srv.pid, flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True, cwd=PACKAGE_ROOT
    )
    try:
        child = int(proc.stdout.readline())
        assert _alive(child)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the reference server outlived its parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
