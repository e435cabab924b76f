"""LaunchedServer on real processes (issue 29): the reference server started, found healthy and
stopped; each launch failure one line with the configuration's name and the log's last lines; and
no server process left once its owner is gone, however the owner ends.

The lifecycle cases that need no model use scripts/real_engines/standin_server.py, a process tree
shaped like SGLang's (HTTP server, two workers, a grandchild, one worker ignoring SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kltui.launch import server as launch_server
from kltui.launch.server import LaunchedServer, LaunchError
from tests.real.lifecycle import group, running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

REPO = Path(__file__).resolve().parents[2]
REFERENCE = [sys.executable, "-m", "kltui.reference", "serve", "--enable-deterministic-inference"]
STANDIN = [sys.executable, str(REPO / "scripts" / "real_engines" / "standin_server.py")]
# The watchdog wakes at once (pidfd or EOF), SIGTERMs the group and SIGKILLs the stubborn worker
# after the 1 s grace these tests use.
BOUND_S = 10.0


def gone_within(pgid: int, watchdog: int | None = None, bound: float = BOUND_S) -> float:
    """Seconds until group `pgid` (and the watchdog) have no live process; fails past `bound`."""
    t0 = time.monotonic()
    while group(pgid) or (watchdog is not None and running(watchdog)):
        assert time.monotonic() - t0 < bound, f"still running: {group(pgid)}"
        time.sleep(0.05)
    return time.monotonic() - t0


def wait_for_group(pgid: int, size: int) -> list[int]:
    deadline = time.monotonic() + 20
    while len(members := group(pgid)) < size and time.monotonic() < deadline:
        time.sleep(0.05)
    return members


async def test_the_reference_server_is_started_healthy_and_stopped(tmp_path):
    seen: list[tuple[float, str]] = []
    srv = LaunchedServer(
        [*REFERENCE, "--disable-cuda-graph", "--port", "30000"],
        name="base",
        log_path=tmp_path / "runs" / "base.log",
    )
    url = await srv.start(progress=lambda s, line: seen.append((s, line)))
    try:
        assert url == f"http://127.0.0.1:{srv.port}" and srv.port != 30000
        assert srv.argv[-4:] == ["--port", str(srv.port), "--host", "127.0.0.1"]
        info = httpx.get(url + "/server_info", trust_env=False).json()
        assert info["port"] == srv.port and info["enable_deterministic_inference"] is True
        assert info["disable_cuda_graph"] is True
        srv.check_alive()
        assert seen and all(b[0] >= a[0] for a, b in zip(seen, seen[1:], strict=False))
        pgid = srv.pgid
        assert pgid is not None and group(pgid)
    finally:
        await srv.stop()
    gone_within(pgid, srv.watchdog_pid, bound=1.0)
    assert srv.returncode is not None
    assert "kltui reference server ready at " + url in srv.log_tail(5)
    with pytest.raises(
        LaunchError, match=r"^base: the server is not running \(never started, or stopped\)$"
    ):
        srv.check_alive()


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        ([sys.executable, "-c", "import sys; sys.exit('fatal: no GPU found')"], 1, "no GPU"),
        ([*REFERENCE, "--page-size", "0"], 2, "error: --page-size must be at least 1"),
        ([*REFERENCE, "--no-such-flag"], 2, "unrecognized arguments: --no-such-flag"),
    ],
    ids=["exits", "rejected-value", "unknown-flag"],
)
async def test_a_command_that_exits_at_once_is_one_line_with_its_code(tmp_path, argv, code, said):
    srv = LaunchedServer(argv, name="page-size=0", log_path=tmp_path / "c.log")
    t0 = time.monotonic()
    with pytest.raises(LaunchError) as e:
        await srv.start()
    msg = str(e.value)
    assert msg.startswith(f"page-size=0: exited with code {code} before it was healthy; log ")
    assert said in msg and "\n" not in msg
    assert e.value.kind == "exited" and e.value.returncode == code
    assert time.monotonic() - t0 < 10
    assert not group(srv.pgid)


async def test_a_server_that_never_becomes_healthy_times_out_and_is_stopped(tmp_path):
    argv = [sys.executable, "-c", "import time; print('loading shards 1/4', flush=True); "
            "time.sleep(600)"]  # fmt: skip
    srv = LaunchedServer(argv, name="tp=2", log_path=tmp_path / "t.log", start_timeout=1.5)
    lines: list[str] = []
    with pytest.raises(LaunchError) as e:
        await srv.start(progress=lambda _s, line: lines.append(line))
    assert str(e.value).startswith("tp=2: not healthy after 1.5 s; log ")
    assert str(e.value).endswith(": loading shards 1/4") and e.value.kind == "timeout"
    assert "loading shards 1/4" in lines
    gone_within(srv.pgid, srv.watchdog_pid, bound=1.0)


def _occupied() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


async def test_a_port_taken_between_the_check_and_the_launch_is_retried_once(tmp_path, monkeypatch):
    taken = _occupied()
    ports = iter([taken.getsockname()[1]])
    real = launch_server.free_port
    monkeypatch.setattr(launch_server, "free_port", lambda host: next(ports, None) or real(host))
    srv = LaunchedServer(REFERENCE, name="base", log_path=tmp_path / "p.log")
    try:
        url = await srv.start()
        assert srv.port != taken.getsockname()[1]
        assert httpx.get(url + "/health", trust_env=False).status_code == 200
        log = (tmp_path / "p.log").read_text()
        assert "Address already in use" in log and "was taken; starting again" in log
    finally:
        await srv.stop()
        taken.close()


async def test_a_port_another_program_answers_on_is_never_taken_for_the_server(
    tmp_path, monkeypatch
):
    """The port kltui picked is taken twice, the second time by an HTTP server that answers
    /health 200: its answer is not the launched server's, and the launch fails on the port."""
    import http.server
    import threading

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    foreign = http.server.HTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    port = foreign.server_address[1]
    monkeypatch.setattr(launch_server, "free_port", lambda host: port)
    # loads for a while before it binds, as a real server does: the foreign answer comes first
    slow = (
        "import runpy, sys, time; time.sleep(0.8); "
        f"runpy.run_path({STANDIN[1]!r}, run_name='__main__')"
    )
    argv = [sys.executable, "-c", slow]
    srv = LaunchedServer(argv, name="fa3", log_path=tmp_path / "f.log", grace=1.0)
    try:
        with pytest.raises(LaunchError) as e:
            await srv.start()
        assert e.value.kind == "port"
        assert str(e.value).startswith(f"fa3: port {port} was taken before the server could bind")
        assert "Address already in use" in str(e.value)
        gone_within(srv.pgid, srv.watchdog_pid)
    finally:
        foreign.shutdown()
        foreign.server_close()


async def test_a_server_that_dies_later_is_seen_and_its_workers_are_stopped(tmp_path):
    srv = LaunchedServer(STANDIN, name="cuda-graph=off", log_path=tmp_path / "d.log", grace=1.0)
    await srv.start()
    pgid = srv.pgid
    assert len(wait_for_group(pgid, 4)) == 4
    srv.check_alive()
    os.kill(pgid, signal.SIGKILL)  # the main process only: its workers stay behind
    deadline = time.monotonic() + 5
    while True:
        try:
            srv.check_alive()
        except LaunchError as e:
            assert str(e).startswith(
                "cuda-graph=off: the server exited with code -9 while kltui was using it"
            )
            assert e.kind == "died" and e.returncode == -9
            break
        assert time.monotonic() < deadline, "check_alive never saw the server die"
        time.sleep(0.05)
    gone_within(pgid, srv.watchdog_pid)
    await srv.stop()


CHILD = """
import asyncio, json, sys
from pathlib import Path
from kltui.launch.server import LaunchedServer

async def main(argv, log, how):
    srv = LaunchedServer(argv, name="child", log_path=Path(log), grace=1.0)
    await srv.start()
    print(json.dumps({"pgid": srv.pgid, "watchdog": srv.watchdog_pid}), flush=True)
    if how == "crash":
        raise RuntimeError("kltui crashed")
    if how != "exit":  # "exit": return without ever asking for a stop
        await asyncio.sleep(3600)

asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]))
"""


def start_owner(argv: list[str], log: Path, how: str) -> tuple[subprocess.Popen, dict]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(argv), str(log), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        child.wait(timeout=30)
        raise AssertionError(f"the owner printed nothing: {child.stderr.read()}")
    return child, json.loads(line)


@pytest.mark.parametrize("how", ["sigkill", "sigterm", "sigint", "exit", "crash"])
def test_no_server_outlives_the_process_that_launched_it(tmp_path, how):
    child, rec = start_owner(STANDIN, tmp_path / "o.log", how)
    try:
        if how in ("sigkill", "sigterm", "sigint"):  # the others end on their own at once
            assert len(wait_for_group(rec["pgid"], 4)) == 4
            sig = {"sigkill": signal.SIGKILL, "sigterm": signal.SIGTERM, "sigint": signal.SIGINT}
            child.send_signal(sig[how])
        child.wait(timeout=30)
        took = gone_within(rec["pgid"], rec["watchdog"])
        print(f"[{how}] process group {rec['pgid']} gone {took:.2f} s after its owner")
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()


def test_the_reference_server_dies_with_a_sigkilled_owner(tmp_path):
    child, rec = start_owner(REFERENCE, tmp_path / "r.log", "sigkill")
    try:
        assert group(rec["pgid"])
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        gone_within(rec["pgid"], rec["watchdog"])
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()
