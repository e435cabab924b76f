#!/usr/bin/env python3
"""Watchdog of one real-engine server (started by manage.py `start`, never by hand).

    supervisor.py --record FILE [--owner-pid PID --owner-start TICKS] [--grace S] -- CMD...

Starts CMD in a new session (so the server and every worker it spawns share one process group),
records the server's pid, start time and process group in FILE, then waits for the first of:
- the owner process (pid + start time) going away, however it ends (normal exit, SIGTERM,
  SIGKILL): a pidfd wakes this process at once;
- SIGTERM/SIGINT/SIGHUP to this process (`real_engines.sh stop`);
- the server exiting on its own.
Then it SIGTERMs the whole process group, SIGKILLs what is left after --grace seconds, waits
until the group is empty and removes FILE. It is a child subreaper, so orphaned workers are
reaped here and an empty group is seen as such at once. Should this process itself be SIGKILLed,
the server's main process dies with it (PR_SET_PDEATHSIG) and `real_engines.sh stop all` finds the
rest of the group from FILE.

Why a separate process: the server is started by a short-lived `start` command, so no
parent-death signal reaches it when the test session that asked for it dies, and a
PR_SET_PDEATHSIG covers one process (its forking thread), not grandchildren such as SGLang's
scheduler or vLLM's engine core.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import procs

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def log(msg: str) -> None:
    print(f"[real_engines supervisor {os.getpid()}] {msg}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="supervisor.py")
    p.add_argument("--record", required=True, type=Path)
    p.add_argument("--owner-pid", type=int)
    p.add_argument("--owner-start", type=int)
    p.add_argument("--grace", type=float, default=3.0)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        p.error("no server command after --")

    procs.set_subreaper()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    for sig in (*STOP_SIGNALS, signal.SIGCHLD):
        signal.signal(sig, lambda *_: None)  # a Python handler, so the wakeup fd hears it

    owner = None
    if args.owner_pid is not None:
        owner = procs.OwnerWatch({"pid": args.owner_pid, "start": args.owner_start})
        if owner.gone():
            log(f"owner pid {args.owner_pid} is already gone; not starting the server")
            args.record.unlink(missing_ok=True)
            return 1

    server = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=procs.pdeathsig_kill
    )
    pgid = server.pid
    server_ident = procs.identity(server.pid) or {"pid": server.pid, "start": -1}
    record = procs.read_record(args.record) or {}
    record.update(
        boot_id=procs.boot_id(),
        supervisor=procs.identity(os.getpid()),
        server=server_ident,
        pgid=pgid,
        owner=owner.ident if owner else None,
    )
    procs.write_record(args.record, record)
    log(f"server pid {server.pid} (process group {pgid}) started" + (
        f"; it stops when owner pid {args.owner_pid} goes away" if owner else ""
    ))  # fmt: skip

    status: int | None = None
    reason = ""
    while not reason:
        fds = [wake_r] + ([owner.fd] if owner and owner.fd is not None else [])
        with contextlib.suppress(InterruptedError):
            select.select(fds, [], [], owner.timeout() if owner else None)
        got = b""
        with contextlib.suppress(BlockingIOError):
            got = os.read(wake_r, 512)
        for pid, st in procs.reap():
            if pid == server.pid:
                status = os.waitstatus_to_exitcode(st)
                server.returncode = status  # reaped here; Popen must not wait for it again
        if owner and owner.gone():
            reason = f"owner pid {args.owner_pid} is gone"
        elif stopped := [s for s in got if s in STOP_SIGNALS]:
            reason = f"got {signal.Signals(stopped[0]).name}"
        elif status is not None:
            reason = f"server exited with code {status}"

    log(f"{reason}: stopping process group {pgid}")
    if procs.stop_group(pgid, args.grace, also=[server_ident]):
        log(f"process group {pgid} is gone")
    else:
        log(f"process group {pgid} still has processes after SIGKILL")
        return 1
    cache = record.get("vllm_cache") or (procs.read_record(args.record) or {}).get("vllm_cache")
    if cache:
        import shutil

        shutil.rmtree(cache, ignore_errors=True)
    current = procs.read_record(args.record)
    if current and (current.get("supervisor") or {}).get("pid") == os.getpid():
        args.record.unlink(missing_ok=True)
    if status is None:
        return 0
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
