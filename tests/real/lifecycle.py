"""Checks that a real-engine server dies with the process that started it: a child process starts
one through the tier's own launch path (launch.Servers), then the child goes away."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .launch import REPO, script

# How long a server's process group may outlive its owner: the watchdog wakes at once (pidfd),
# SIGTERMs the group and SIGKILLs what is left after 3 s.
BOUND_S = 10.0

CHILD = """
import sys, time
from tests.real.launch import Servers
print("URL", Servers().get("lifecycle", sys.argv[1]), flush=True)
if sys.stdin.readline().strip() == "exit":
    sys.exit(0)  # a normal exit that never asks for the server to stop
time.sleep(3600)
"""


def running(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return raw[raw.rindex(")") + 2] not in "ZX"


def group(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes in process group `pgid`, read from /proc."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                raw = (d / "stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            if fields[0] not in "ZX" and int(fields[2]) == pgid:
                out.append(int(d.name))
    return out


def record(url: str, env: dict) -> dict:
    status = json.loads(script("status", timeout=60, env=env).stdout)
    return next(r for r in status["running"] if r["url"] == url)


def start_in_child(engine: str, env: dict, timeout: float) -> tuple[subprocess.Popen, dict]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, engine],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, **env, "PYTHONPATH": str(REPO)},
    )
    try:
        url = _readline(child, timeout)
    except BaseException:
        child.kill()
        raise
    return child, record(url, env)


def _readline(child: subprocess.Popen, timeout: float) -> str:
    """The URL the child prints once its server is ready (other lines are its progress)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for ln in child.stdout:
            lines.put(ln)
        lines.put(None)  # the child closed its stdout: it exited, no URL will come

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        if line.startswith("URL "):
            return line.split()[1]
    child.kill()
    child.wait()
    raise AssertionError(f"the child printed no URL within {timeout:.0f} s:\n{child.stderr.read()}")


def end_child(child: subprocess.Popen, how: str) -> None:
    if how == "exit":
        child.stdin.write("exit\n")
        child.stdin.flush()
    elif how == "sigint-twice":
        child.send_signal(signal.SIGINT)
        time.sleep(0.2)
        child.send_signal(signal.SIGINT)
    else:
        child.send_signal({"sigkill": signal.SIGKILL, "sigterm": signal.SIGTERM}[how])
    child.wait(timeout=30)
    child.stderr.close()
    child.stdin.close()


def seconds_until_gone(rec: dict, bound: float = BOUND_S) -> float:
    """Seconds until the server's process group and its watchdog are gone; fails past `bound`."""
    t0 = time.monotonic()
    pgid, watchdog = int(rec["pgid"]), int(rec["supervisor"]["pid"])
    while group(pgid) or running(watchdog):
        elapsed = time.monotonic() - t0
        assert elapsed < bound, f"still running {elapsed:.1f} s later: {group(pgid)}"
        time.sleep(0.1)
    return time.monotonic() - t0
