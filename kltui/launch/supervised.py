"""The owner's side of the watchdog (`supervisor.py`): `Supervised`, a command run under it, seen
from the process that owns it (Linux only). The watchdog itself stays a bare script of the
standard library; this side is kltui's, and reads the watchdog's status lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from kltui.launch.supervisor import SCRIPT, identity, stop_group


class Supervised:
    """A command run under the watchdog, seen from the process that owns it (Linux only).

    The watchdog is this process's child but in its own session, so a Ctrl-C meant for kltui's
    terminal reaches neither it nor the server; it stops the server's whole process group when
    this process goes away in any way, when `terminate` is called, or when the server exits. The
    server's stdout and stderr are appended to `log_path`.
    """

    def __init__(
        self,
        cmd: list[str],
        *,
        log_path: Path,
        env: dict[str, str] | None = None,
        grace: float = 5.0,
        cwd: str | Path | None = None,
    ) -> None:
        me = identity(os.getpid())
        argv = [sys.executable, "-E", "-s", str(SCRIPT), "--status", "--quiet", "--stdin-owner"]
        if me is not None:
            argv += ["--owner-pid", str(me["pid"]), "--owner-start", str(me["start"])]
        argv += ["--grace", str(grace), "--log", str(log_path), "--", *cmd]
        self.grace = grace
        self.server: dict | None = None  # {pid, start, pgid} once started
        self.exit_code: int | None = None
        self.error: tuple[str, str] | None = None  # (kind, message) when it could not start
        self.stopped: bool | None = None
        self._buf = b""
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)

    @property
    def pgid(self) -> int | None:
        """The server's process group (its pid), once the watchdog started it."""
        return None if self.server is None else int(self.server["pgid"])

    def poll(self) -> None:
        """Read whatever the watchdog has reported since the last call (never blocks)."""
        out = self.proc.stdout
        if out is None or out.closed:
            return
        while True:
            try:
                chunk = os.read(out.fileno(), 65536)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                break
            self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        for raw in lines:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "started" in msg:
                self.server = msg["started"]
            elif "error" in msg:
                self.error = (str(msg["error"]), str(msg.get("message", "")))
            elif "exited" in msg:
                self.exit_code = int(msg["exited"])
            elif "stopped" in msg:
                self.stopped = bool(msg["stopped"])

    def watchdog_alive(self) -> bool:
        """True while the watchdog process runs."""
        return self.proc.poll() is None

    def server_running(self) -> bool:
        """True while the server was started and has not exited (as far as reported)."""
        self.poll()
        return self.server is not None and self.exit_code is None and self.watchdog_alive()

    def terminate(self) -> None:
        """Ask the watchdog to stop the server's group (SIGTERM, SIGKILL after `grace`)."""
        if self.watchdog_alive():
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> bool:
        """End the watchdog and whatever is left of the server's group, here and now. True when
        nothing of the group is left."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        pgid = self.pgid
        return True if pgid is None else stop_group(pgid, 0.0)

    def close(self) -> None:
        """Release the pipes (closing stdin is itself a stop request to a live watchdog)."""
        self.poll()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
