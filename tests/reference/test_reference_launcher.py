"""ReferenceServer: readiness, clear failures, and a child that never outlives its parent."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import textwrap
import time

import httpx
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


def test_sglang_flag_names_are_accepted_beside_kltuis() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--enable-deterministic-inference", "--model-path", "/m", "--random-seed", "7"]
        + ["--disable-radix-cache", "--page-size", "4", "--disable-cuda-graph"]
        + ["--cuda-graph-max-bs", "8"]
    )
    assert args.deterministic and args.checkpoint == "/m" and args.random_seed == 7
    assert args.disable_radix_cache and args.page_size == 4
    assert not parser.parse_args([]).deterministic


def test_serve_help_lists_the_sglang_flags() -> None:
    """`kltui ablate` reads a launch command's --help to know which flags it may vary."""
    out = subprocess.run(
        [sys.executable, "-m", "kltui.reference", "serve", "--help"],
        capture_output=True, text=True, cwd=PACKAGE_ROOT, check=True,
    )  # fmt: skip
    for flag in (
        "--enable-deterministic-inference", "--deterministic", "--disable-radix-cache",
        "--page-size", "--random-seed", "--model-path", "--fault", "--disable-cuda-graph",
        "--cuda-graph-max-bs", "--port", "--host",
    ):  # fmt: skip
        assert flag in out.stdout, flag


def test_sglang_cuda_graph_flags_are_accepted_and_change_nothing(reference_servers, det_server):
    """A flag the server accepts and ignores: /server_info says what it said without it
    (disable_cuda_graph is true either way: this server has no CUDA graphs)."""
    ignored = ("--disable-cuda-graph", "--cuda-graph-max-bs", "8")
    srv = reference_servers.own(random_seed=0, deterministic=True, page_size=4, extra_args=ignored)
    volatile = {"port", "launch_command", "startup_time", "internal_states"}

    def info(url: str) -> dict:
        got = httpx.get(url + "/server_info", trust_env=False).json()
        return {k: v for k, v in got.items() if k not in volatile}

    with_flags, without = info(srv.url), info(det_server.url)
    assert with_flags == without and with_flags["disable_cuda_graph"] is True
