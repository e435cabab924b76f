"""A server started by scripts/real_engines.sh for the real-engine tier dies with the process
that started it, whole process group included, however that process ends; `stop`/`status` find
what an earlier run left from the records written at start, and nothing else.

These run the tier's own launch path (tests/real/launch.py -> real_engines.sh start -> watchdog)
on the `standin` engine: a small process tree shaped like SGLang's (HTTP server, two workers, a
grandchild, one worker ignoring SIGTERM). The same check on real SGLang/vLLM is in
tests/real/test_engine_lifecycle_real.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.real.launch import script
from tests.real.lifecycle import (
    end_child,
    group,
    record,
    running,
    seconds_until_gone,
    start_in_child,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@pytest.fixture
def env(tmp_path):
    env = {"KLTUI_ENGINES_CACHE": str(tmp_path)}
    yield env
    script("stop", "all", timeout=120, env=env)  # whatever a failed test left


def wait_for_group(pgid: int, size: int) -> list[int]:
    deadline = time.monotonic() + 30
    while len(members := group(pgid)) < size and time.monotonic() < deadline:
        time.sleep(0.1)
    return members


@pytest.mark.parametrize("how", ["sigkill", "sigterm", "sigint-twice", "exit"])
def test_server_group_dies_with_the_process_that_started_it(env, how):
    child, rec = start_in_child("standin", env, timeout=60)
    pgid = rec["pgid"]
    assert rec["owner"]["pid"] == child.pid
    # server, two workers and a grandchild, all in the server's own process group
    assert len(wait_for_group(pgid, 4)) == 4
    end_child(child, how)
    took = seconds_until_gone(rec)
    print(f"[{how}] process group {pgid} gone {took:.2f} s after its owner")
    assert json.loads(script("status", timeout=60, env=env).stdout)["running"] == []


def test_stop_all_finds_a_server_whose_watchdog_was_killed(env):
    """An earlier run whose watchdog was SIGKILLed leaves workers running: the server's main
    process dies with the watchdog (parent-death signal), its workers do not. `status` reports
    them from the record and `stop all` ends them."""
    proc = script("start", "standin", timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    rec = record(proc.stdout.strip(), env)
    pgid, server = rec["pgid"], rec["server"]["pid"]
    assert len(wait_for_group(pgid, 4)) == 4
    os.kill(rec["supervisor"]["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while running(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(server)
    orphans = group(pgid)
    assert len(orphans) == 3, orphans

    st = record(rec["url"], env)
    assert st["alive"] and not st["watchdog_alive"]
    assert set(orphans) <= set(st["live_pids"])
    stop = script("stop", "all", timeout=120, env=env)
    assert stop.returncode == 0, stop.stderr
    assert "1 server(s) stopped" in stop.stderr
    assert group(pgid) == []
    assert json.loads(script("status", timeout=60, env=env).stdout)["running"] == []


def test_stop_all_leaves_a_process_that_only_reuses_a_recorded_pid(env, tmp_path):
    """A record whose pids now belong to another process (same pid, another start time) names
    nothing: `stop all` drops the record and leaves that process alone."""
    bystander = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
    )
    try:
        ident = {"pid": bystander.pid, "start": 1}  # recorded start time differs from the real one
        boot = open("/proc/sys/kernel/random/boot_id").read().strip()
        run = tmp_path / "run"
        run.mkdir()
        (run / "standin-1.json").write_text(json.dumps({
            "engine": "standin", "url": "http://127.0.0.1:1", "port": 1, "cmd": [],
            "boot_id": boot, "supervisor": ident, "server": ident, "pgid": bystander.pid,
            "members": [ident],
        }))  # fmt: skip
        st = record("http://127.0.0.1:1", env)
        assert not st["alive"] and st["live_pids"] == []
        stop = script("stop", "all", timeout=60, env=env)
        assert stop.returncode == 0, stop.stderr
        assert "0 server(s) stopped" in stop.stderr
        assert bystander.poll() is None
        assert not (run / "standin-1.json").exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_records_from_before_the_watchdog_match_pid_and_command_line(env, tmp_path):
    """A record written by the launcher before it had a watchdog holds the server's pid (its
    process group too) and command line: `stop all` ends that group only while the pid still runs
    that command line."""
    cmd = [sys.executable, "-c", "import time; time.sleep(120)"]
    old = subprocess.Popen(cmd, start_new_session=True)
    other = subprocess.Popen(cmd, start_new_session=True)
    try:
        run = tmp_path / "run"
        run.mkdir()
        for port, proc, argv in ((1, old, cmd), (2, other, [*cmd, "--not-this-one"])):
            (run / f"sglang-{port}.json").write_text(json.dumps({
                "engine": "sglang", "url": f"http://127.0.0.1:{port}", "port": port,
                "pid": proc.pid, "cmd": argv,
            }))  # fmt: skip
        assert record("http://127.0.0.1:1", env)["live_pids"] == [old.pid]
        assert record("http://127.0.0.1:2", env)["live_pids"] == []
        stop = script("stop", "all", timeout=60, env=env)
        assert "1 server(s) stopped" in stop.stderr, stop.stderr
        assert old.wait(timeout=10) == -signal.SIGTERM
        assert other.poll() is None
    finally:
        for p in (old, other):
            p.kill()
            p.wait()
