"""Process identities for real-engine servers: what is recorded when a server starts, and how a
later `stop`/`status` recognises exactly those processes again (Linux /proc, standard library).

A process is identified by (pid, start time in clock ticks since boot, boot id): a pid alone can be
reused once the process is gone; the three together cannot. Nothing here matches by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def boot_id() -> str:
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
        self.ident, self.poll_s, self.fd = ident, poll_s, None
        with contextlib.suppress(AttributeError, OSError):
            self.fd = os.pidfd_open(int(ident["pid"]))
        # Checked after opening: the pidfd then refers to the recorded process or to nothing.
        if self.fd is not None and not same(ident):
            os.close(self.fd)
            self.fd = None

    def gone(self) -> bool:
        if self.fd is not None:
            return bool(select.select([self.fd], [], [], 0)[0])
        return not same(self.ident)

    def timeout(self) -> float | None:
        """How long a poll may sleep before `gone` must be asked again."""
        return None if self.fd is not None else self.poll_s


def reap() -> list[tuple[int, int]]:
    """Reap every exited child (including orphans adopted as subreaper): [(pid, wait status)]."""
    out = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return out
        if pid == 0:
            return out
        out.append((pid, status))


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies still count for killpg; /proc tells whether anything in the group still runs.
    return bool(group_members(pgid))


def stop_group(pgid: int, grace: float, also: list[dict] = (), hard: float = 10.0) -> bool:
    """SIGTERM process group `pgid` (and the recorded processes `also`, should one have left the
    group), SIGKILL whatever still runs after `grace` s; reap our own children meanwhile. True when
    nothing of it is left within grace + hard seconds."""

    def signal_all(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        for ident in also:
            if same(ident):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(ident["pid"]), sig)

    def left() -> bool:
        reap()
        return _group_exists(pgid) or any(same(i) for i in also)

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
        time.sleep(0.1)
    return True


def read_record(path: Path) -> dict | None:
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
