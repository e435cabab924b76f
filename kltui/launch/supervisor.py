"""The watchdog that ties a launched server's life to its owner's (Linux only, standard library
only, Python >= 3.10).

No server kltui starts may outlive kltui: not on Ctrl-C, SIGTERM, SIGKILL or a crash. Neither an
exit handler nor a parent-death signal can promise that: a SIGKILLed process runs no handler, and
PR_SET_PDEATHSIG covers one process (and fires when the *thread* that forked it ends), not the
scheduler and detokenizer processes a server such as SGLang spawns. So the server runs under a
small separate process, the watchdog:

    python -E -s supervisor.py [--owner-pid PID --owner-start TICKS] [--stdin-owner]
        [--grace S] [--log FILE] [--status] [--quiet] [--record FILE] [--remove DIR]... -- CMD...

It starts CMD in a new session (so the server and every worker it spawns share one process group
whose id is the server's pid) and waits for the first of:
- the owner going away, however it ends: a pidfd on the owner (identified by pid and start time,
  so a reused pid is not mistaken for it) wakes the watchdog at once; with `--stdin-owner`, EOF on
  its stdin (the owner holds the pipe's other end, which the kernel closes when the owner dies);
- SIGTERM, SIGINT or SIGHUP to the watchdog (how the owner asks for a stop);
- the server exiting on its own.
Then it SIGTERMs the whole process group, SIGKILLs what is left after `--grace` seconds and waits
until the group is empty. It is a child subreaper, so orphaned workers are reaped here and an empty
group is seen as such at once. The server's main process also gets PR_SET_PDEATHSIG, so that a
SIGKILL of the watchdog itself takes the server down with it (its workers are then found from the
record, or by the owner that knows the process group).

With `--status` the watchdog reports on its stdout, one JSON object a line:
`{"started": {"pid", "start", "pgid"}}`, `{"error": KIND, "message": TEXT}` (the command could
not be started: KIND is "not_found" or "cannot_start"), `{"exited": CODE}` (the server's exit
code, negative for a signal) and `{"stopped": BOOL}` (whether the group is gone). `Supervised`
is the owner's side of this. With `--record FILE` it also writes the identities of itself and the
server into a JSON record (how scripts/real_engines finds servers of an earlier run).

This file must stay runnable on its own (`python -E -s`, no kltui on the path): it imports the
standard library only, and kltui imports nothing else into it (an import-linter contract).
Processes are identified by (pid, start time in clock ticks since boot, boot id) read from /proc,
never by name.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

PROC = Path("/proc")
SCRIPT = Path(__file__).resolve()
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Seconds after SIGKILL within which a process group must be gone before a stop reports failure.
HARD_S = 10.0


# ---- process identities (/proc) ----


def boot_id() -> str:
    """This boot's id: a recorded (pid, start time) means nothing after a reboot."""
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def stat(pid: int) -> dict | None:
    """pgrp, session and start time of a live process, or None (gone, or a zombie: it runs
    nothing and disappears when reaped)."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    # The command name (field 2) may hold spaces and parentheses; every field after it is numeric.
    fields = raw[raw.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return {"pgrp": int(fields[2]), "sid": int(fields[3]), "start": int(fields[19])}


def identity(pid: int) -> dict | None:
    """{pid, start} of a live process, or None."""
    st = stat(pid)
    return None if st is None else {"pid": pid, "start": st["start"]}


def same(ident: dict | None) -> bool:
    """True when the process recorded as `ident` is still running (same pid, same start time)."""
    if not ident:
        return False
    st = stat(int(ident["pid"]))
    return st is not None and st["start"] == int(ident["start"])


def group_members(pgid: int) -> list[dict]:
    """Every live process in process group `pgid`: {pid, start, sid}."""
    out = []
    for entry in PROC.iterdir() if PROC.is_dir() else []:
        if not entry.name.isdigit():
            continue
        st = stat(int(entry.name))
        if st is not None and st["pgrp"] == pgid:
            out.append({"pid": int(entry.name), "start": st["start"], "sid": st["sid"]})
    return out


def listening_inodes(port: int) -> set[int]:
    """Socket inodes listening on TCP `port` (any address, IPv4 or IPv6) in this network
    namespace; empty when /proc/net cannot be read."""
    found: set[int] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            # local_address is HEX_IP:HEX_PORT; state 0A is LISTEN
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(f[9]))
    return found


def group_listens(pgid: int, port: int) -> bool | None:
    """Whether a process of group `pgid` holds the socket listening on `port`: None when no
    listener is visible at all (nothing to tell), False when one is and it belongs to some other
    process (another program took the port)."""
    inodes = listening_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    for member in group_members(pgid):
        fd_dir = PROC / str(member["pid"]) / "fd"
        with contextlib.suppress(OSError):
            for fd in fd_dir.iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in wanted:
                        return True
    return False


# ---- the kernel's help: subreaper, parent-death signal, pidfd ----


def _prctl(*args: int) -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(*args)


def set_subreaper() -> None:
    """Orphaned descendants are re-parented to this process (not init), so it reaps them and a
    process group is seen to be empty as soon as its last member exits."""
    with contextlib.suppress(Exception):
        _prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def pdeathsig_kill() -> None:
    """For a child's preexec_fn: SIGKILL when the (single-threaded) parent dies. Call
    set_subreaper first: it imports ctypes before the fork."""
    parent = os.getppid()
    _prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the prctl took hold
        os._exit(1)


class OwnerWatch:
    """Becomes ready when the owner process (pid, start time) is gone, whatever ended it.

    A pidfd (Linux >= 5.3) wakes the watcher at the owner's exit; without one, the owner is polled
    every `poll_s`.
    """

    def __init__(self, ident: dict, poll_s: float = 0.5) -> None:
        self.ident, self.poll_s = ident, poll_s
        self.fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.fd = os.pidfd_open(int(ident["pid"]))
        # Checked after opening: the pidfd then refers to the recorded process or to nothing.
        if self.fd is not None and not same(ident):
            os.close(self.fd)
            self.fd = None

    def gone(self) -> bool:
        """True once the owner has exited."""
        if self.fd is not None:
            return bool(select.select([self.fd], [], [], 0)[0])
        return not same(self.ident)

    def timeout(self) -> float | None:
        """How long a poll may sleep before `gone` must be asked again."""
        return None if self.fd is not None else self.poll_s


def reap() -> list[tuple[int, int]]:
    """Reap every exited child (including orphans adopted as subreaper): [(pid, wait status)]."""
    out: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return out
        if pid == 0:
            return out
        out.append((pid, status))


def group_exists(pgid: int) -> bool:
    """True while a process of group `pgid` still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies still count for killpg; /proc tells whether anything in the group still runs.
    return bool(group_members(pgid))


def stop_group(
    pgid: int,
    grace: float,
    also: list[dict] | tuple = (),
    hard: float = HARD_S,
    reaped: dict[int, int] | None = None,
) -> bool:
    """SIGTERM process group `pgid` (and the recorded processes `also`, should one have left the
    group), SIGKILL whatever still runs after `grace` s; reap our own children meanwhile (their
    wait statuses go into `reaped`). True when nothing of it is left within grace + hard seconds."""

    def signal_all(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        for ident in also:
            if same(ident):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(ident["pid"]), sig)

    def left() -> bool:
        for pid, status in reap():
            if reaped is not None:
                reaped[pid] = status
        return group_exists(pgid) or any(same(i) for i in also)

    signal_all(signal.SIGTERM)
    killed_at = time.monotonic() + grace
    deadline = killed_at + hard
    sent_kill = False
    while left():
        now = time.monotonic()
        if now >= deadline:
            return False
        if not sent_kill and now >= killed_at:
            signal_all(signal.SIGKILL)
            sent_kill = True
        time.sleep(0.05)
    return True


def read_record(path: Path) -> dict | None:
    """The JSON record at `path`, or None when it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_record(path: Path, record: dict) -> None:
    """Replace the record in one step, so a concurrent reader sees the old or the new one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, path)


# ---- the watchdog process ----


class _Watchdog:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.log: IO[bytes] | None = open(args.log, "ab") if args.log else None

    def say(self, msg: str, *, always: bool = False) -> None:
        if self.args.quiet and not always:
            return
        line = f"[kltui watchdog {os.getpid()}] {msg}\n".encode()
        with contextlib.suppress(OSError):
            if self.log is not None:
                self.log.write(line)
                self.log.flush()
            else:
                sys.stderr.buffer.write(line)
                sys.stderr.flush()

    def status(self, **obj: Any) -> None:
        if self.args.status:
            # The owner may be gone (that is often why we are stopping): nobody left to tell.
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.write(json.dumps(obj) + "\n")
                sys.stdout.flush()

    def forget_record(self) -> None:
        rec = self.args.record
        if rec is None:
            return
        # a record another watchdog has taken over since is that one's to remove
        owner = (read_record(rec) or {}).get("supervisor") or {}
        if owner.get("pid") in (None, os.getpid()):
            rec.unlink(missing_ok=True)

    def start(self, cmd: list[str]) -> subprocess.Popen | None:
        """The server started in a session of its own; None (said, reported) when it cannot be."""
        try:
            return subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=subprocess.STDOUT if self.log is not None else None,
                start_new_session=True,
                preexec_fn=pdeathsig_kill,
            )
        except OSError as e:
            kind = "not_found" if isinstance(e, FileNotFoundError) else "cannot_start"
            self.say(f"cannot start {cmd[0]!r}: {e.strerror or e}", always=True)
            self.status(error=kind, message=f"{cmd[0]}: {e.strerror or e}")
            self.forget_record()
            return None

    def wait(
        self, server: subprocess.Popen, owner: OwnerWatch | None, wake_r: int
    ) -> tuple[str, int | None]:
        """Wait for the first reason to stop: (that reason, the server's exit code if it
        exited meanwhile). Children are reaped as they exit (this is their subreaper)."""
        code: int | None = None
        reason = ""
        stdin_fd = sys.stdin.fileno() if self.args.stdin_owner else None
        while not reason:
            fds = [wake_r]
            if owner is not None and owner.fd is not None:
                fds.append(owner.fd)
            if stdin_fd is not None:
                fds.append(stdin_fd)
            ready: list = []
            with contextlib.suppress(InterruptedError):
                ready = select.select(fds, [], [], owner.timeout() if owner else None)[0]
            got = b""
            with contextlib.suppress(BlockingIOError):
                got = os.read(wake_r, 512)
            for pid, st in reap():
                if pid == server.pid:
                    code = os.waitstatus_to_exitcode(st)
                    server.returncode = code  # reaped here; Popen must not wait for it again
                    self.status(exited=code)
            if stdin_fd is not None and stdin_fd in ready and not os.read(stdin_fd, 512):
                reason = "the owner closed its end of stdin"
            elif owner and owner.gone():
                reason = f"owner pid {self.args.owner_pid} is gone"
            elif stopped := [s for s in got if s in STOP_SIGNALS]:
                reason = f"got {signal.Signals(stopped[0]).name}"
            elif code is not None:
                reason = f"server exited with code {code}"
        return reason, code

    def stop(
        self, server: subprocess.Popen, server_ident: dict, code: int | None
    ) -> tuple[bool, int | None]:
        """Stop the server's process group: (whether it is gone, the server's exit code when
        known, from its own exit or from the stop)."""
        pgid = server.pid
        reaped: dict[int, int] = {}
        gone = stop_group(pgid, self.args.grace, also=[server_ident], reaped=reaped)
        if code is None and gone and server.pid not in reaped:
            # stop_group can see the group gone while the leader is a zombie it has not reaped
            # yet (it died between the reap and the /proc look): its status is there to collect
            until = time.monotonic() + 1.0
            with contextlib.suppress(ChildProcessError):
                while (got_pid := os.waitpid(server.pid, os.WNOHANG))[0] == 0:
                    if time.monotonic() >= until:
                        break
                    time.sleep(0.01)
                else:
                    reaped[server.pid] = got_pid[1]
        if code is None and server.pid in reaped:  # it exited because we stopped it
            code = os.waitstatus_to_exitcode(reaped[server.pid])
            self.status(exited=code)
        self.status(stopped=gone)
        if gone:
            self.say(f"process group {pgid} is gone")
        else:
            self.say(f"process group {pgid} still has processes after SIGKILL", always=True)
        return gone, code


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The watchdog's options and the server command after `--` (exit 2 on a usage error)."""
    p = argparse.ArgumentParser(prog="supervisor.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--owner-pid", type=int, help="stop the server when this process is gone")
    p.add_argument("--owner-start", type=int, help="the owner's start time (/proc/PID/stat)")
    p.add_argument("--stdin-owner", action="store_true", help="also stop at EOF on stdin")
    p.add_argument("--grace", type=float, default=3.0, help="seconds from SIGTERM to SIGKILL")
    p.add_argument("--log", type=Path, help="append the server's stdout and stderr to FILE")
    p.add_argument("--status", action="store_true", help="JSON status lines on stdout")
    p.add_argument("--quiet", action="store_true", help="log only what went wrong")
    p.add_argument("--record", type=Path, help="JSON record of the watchdog and the server")
    p.add_argument("--remove", type=Path, action="append", default=[], help="delete after stop")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        p.error("no server command after --")
    if (args.owner_pid is None) != (args.owner_start is None):
        p.error("--owner-pid and --owner-start go together")
    return args, cmd


def _wakeup_pipe() -> int:
    """The read end of a pipe that every stop signal and SIGCHLD writes to (select waits on it)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    for sig in (*STOP_SIGNALS, signal.SIGCHLD):
        signal.signal(sig, lambda *_: None)  # a Python handler, so the wakeup fd hears it
    return wake_r


def main(argv: list[str]) -> int:
    """The watchdog: start the command after `--`, stop its process group when the owner goes."""
    args, cmd = _parse(argv)
    w = _Watchdog(args)

    set_subreaper()
    wake_r = _wakeup_pipe()

    owner = None
    if args.owner_pid is not None:
        owner = OwnerWatch({"pid": args.owner_pid, "start": args.owner_start})
        if owner.gone():
            w.say(
                f"owner pid {args.owner_pid} is already gone; not starting the server", always=True
            )
            w.status(error="owner_gone", message=f"owner pid {args.owner_pid} is gone")
            w.forget_record()
            return 1

    server = w.start(cmd)
    if server is None:
        return 127
    pgid = server.pid
    server_ident = identity(server.pid) or {"pid": server.pid, "start": -1}
    w.status(started={**server_ident, "pgid": pgid})
    if args.record is not None:
        record = read_record(args.record) or {}
        record.update(
            boot_id=boot_id(),
            supervisor=identity(os.getpid()),
            server=server_ident,
            pgid=pgid,
            owner=owner.ident if owner else None,
        )
        write_record(args.record, record)
    w.say(f"server pid {server.pid} (process group {pgid}) started" + (
        f"; it stops when owner pid {args.owner_pid} goes away" if owner else ""
    ))  # fmt: skip

    reason, code = w.wait(server, owner, wake_r)
    w.say(f"{reason}: stopping process group {pgid}")
    gone, code = w.stop(server, server_ident, code)
    for folder in args.remove:
        shutil.rmtree(folder, ignore_errors=True)
    w.forget_record()
    if not gone:
        return 1
    if code is None:
        return 0
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
