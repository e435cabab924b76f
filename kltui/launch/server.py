"""`LaunchedServer`: a server kltui starts itself, waits for and stops (Linux only).

    srv = LaunchedServer(["python", "-m", "sglang.launch_server", "--model-path", M],
                         name="attention-backend=fa3", log_path=runs / "fa3.log")
    url = await srv.start(progress=lambda s, line: ...)   # GET /health answered 200
    ...
    srv.check_alive()                                      # LaunchError once it died
    await srv.stop()

kltui picks a free loopback port and puts it into the command (`--host`/`--port` replaced, or
appended), so two configurations never share a port and nothing listens beyond this machine. The
server runs under the watchdog of `supervisor.py` in its own process group: it is stopped with
kltui however kltui ends. Every failure is one `LaunchError` line that names the configuration
and ends with the log's last lines; the caller escapes it before showing it, as everything a
server wrote.

A server that listens only inside a container (`docker run ...`) cannot be launched this way: the
port kltui checks must be held by the launched process group itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from kltui.launch.supervised import Supervised
from kltui.launch.supervisor import HARD_S, group_listens

# What a server that lost the race for its port writes (uvicorn, SGLang, vLLM, the reference).
PORT_TAKEN = re.compile(r"address already in use|errno 98\b|eaddrinuse", re.IGNORECASE)
POLL_S = 0.2
TAIL_IN_MESSAGE = 3
_TAIL_BYTES = 64 * 1024

Progress = Callable[[float, str], None]


class LaunchError(Exception):
    """A launched server that could not be used, in one line: `NAME: WHAT; log PATH: last | lines`.

    `kind` says which failure: "not_found" (no such command), "cannot_start", "exited" (before it
    was healthy; `returncode` holds its exit code), "timeout" (never healthy within the start
    timeout), "port" (its port was taken twice), "died" (after it was healthy), "usage" (a bad
    argument). `tail` holds the log's last non-empty lines, unescaped.
    """

    def __init__(
        self,
        name: str,
        what: str,
        *,
        kind: str,
        log_path: Path | None = None,
        tail: list[str] | None = None,
        returncode: int | None = None,
    ) -> None:
        self.name, self.what, self.kind = name, what, kind
        self.log_path, self.returncode = log_path, returncode
        self.tail = list(tail or [])
        line = f"{name}: {what}"
        if log_path is not None:
            line += f"; log {log_path}"
        if self.tail:
            line += ": " + " | ".join(self.tail[-TAIL_IN_MESSAGE:])
        super().__init__(line)


def is_loopback(host: str) -> bool:
    """True for localhost and the loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at `host` right now (the kernel's pick). Another program may
    still take it before the server binds it: `LaunchedServer.start` retries once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host.strip("[]"), 0))
        return int(s.getsockname()[1])


def with_address(argv: list[str], host: str, port: int) -> list[str]:
    """`argv` with its `--host`/`--port` (either as `--port N` or `--port=N`) set to `host` and
    `port`, each appended when missing."""
    out: list[str] = []
    seen = {"--host": False, "--port": False}
    value = {"--host": host, "--port": str(port)}
    i = 0
    while i < len(argv):
        arg = argv[i]
        flag = arg.split("=", 1)[0]
        if flag in value:
            seen[flag] = True
            if "=" in arg:
                out.append(f"{flag}={value[flag]}")
            else:
                out += [flag, value[flag]]
                # the old value, unless the flag was last or is followed by another option
                if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                    i += 1
        else:
            out.append(arg)
        i += 1
    for flag, was in seen.items():
        if not was:
            out += [flag, value[flag]]
    return out


def read_tail(path: Path, n: int) -> list[str]:
    """The last `n` non-empty lines of a log file (a line a progress bar redraws with carriage
    returns shows its latest state only); [] when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _TAIL_BYTES))
            raw = f.read()
    except OSError:
        return []
    text = raw.decode("utf-8", errors="replace")
    # a carriage return redraws its line in place: keep what it shows last
    lines = [
        next((seg.strip() for seg in reversed(ln.split("\r")) if seg.strip()), "")
        for ln in text.split("\n")
    ]
    return [ln for ln in lines if ln][-n:] if n > 0 else []


class LaunchedServer:
    """One server command kltui starts on a free loopback port, waits for and stops.

    `argv` is the command as the user wrote it; `self.argv` is what runs (with kltui's host and
    port). `env` adds to kltui's own environment. `start_timeout` bounds the wait for
    `GET /health` (seconds); `grace` is how long the group has between SIGTERM and SIGKILL.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        name: str,
        log_path: Path,
        host: str = "127.0.0.1",
        env: dict[str, str] | None = None,
        start_timeout: float = 600.0,
        grace: float = 5.0,
    ) -> None:
        self.name = name
        self.log_path = Path(log_path)
        self.host = host
        self.start_timeout = start_timeout
        self.grace = grace
        self.base_argv = list(argv)
        self.argv: list[str] = list(argv)
        self.env = {**os.environ, **(env or {})}
        self.port: int | None = None
        self.url = ""
        self.startup_s: float | None = None
        self._sup: Supervised | None = None
        self._started = False
        self._stopped = False

    # ---- what the caller reads ----

    @property
    def returncode(self) -> int | None:
        """The server's exit code once it exited (negative: the signal that ended it)."""
        if self._sup is None:
            return None
        self._sup.poll()
        return self._sup.exit_code

    @property
    def pgid(self) -> int | None:
        """The server's process group (every worker of it is in there), once started."""
        return None if self._sup is None else self._sup.pgid

    @property
    def watchdog_pid(self) -> int | None:
        """The pid of the watchdog process that holds the server's group, once started."""
        return None if self._sup is None else self._sup.proc.pid

    def log_tail(self, n: int = 20) -> list[str]:
        """The last `n` non-empty lines of the server's log (unescaped)."""
        return read_tail(self.log_path, n)

    def error(self, what: str, kind: str, returncode: int | None = None) -> LaunchError:
        """A `LaunchError` for this server, with its log's last lines."""
        return LaunchError(
            self.name,
            what,
            kind=kind,
            log_path=self.log_path,
            tail=self.log_tail(),
            returncode=returncode,
        )

    # ---- start ----

    def _check(self) -> None:
        if not self.base_argv or not self.base_argv[0]:
            raise LaunchError(self.name, "the launch command is empty", kind="usage")
        if not is_loopback(self.host):
            raise LaunchError(
                self.name,
                f"host {self.host!r} is not a loopback address (kltui launches servers on "
                "127.0.0.1 only)",
                kind="usage",
            )
        exe = self.base_argv[0]
        path = self.env.get("PATH", os.defpath)
        if shutil.which(exe, path=path) is None:
            raise LaunchError(self.name, f"command not found: {exe}", kind="not_found")

    async def start(self, progress: Progress | None = None) -> str:
        """Start the server and wait until `GET /health` answers 200 from it; return its base
        URL. `progress(seconds, last log line)` is called every fraction of a second meanwhile.
        A port taken between kltui's check and the server's bind is retried once on a new one.
        Raises `LaunchError` (the server is stopped first)."""
        if self._started:
            raise LaunchError(self.name, "this server was already started", kind="usage")
        self._started = True
        self._check()
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_bytes(b"")
        except OSError as e:
            raise LaunchError(
                self.name, f"cannot write its log {self.log_path}: {e.strerror or e}", kind="usage"
            ) from None
        t0 = time.monotonic()
        try:
            for attempt in (1, 2):
                if await self._attempt(t0, progress):
                    self.startup_s = time.monotonic() - t0
                    return self.url
                if attempt == 1:
                    with open(self.log_path, "a") as log:
                        log.write(f"kltui: port {self.port} was taken; starting again on another\n")
            raise self.error(
                f"port {self.port} was taken before the server could bind it, twice",
                "port",
                self.returncode,
            )
        except BaseException:
            # a failure, a timeout or the caller's cancellation: nothing may be left running
            await self.stop()
            raise

    async def _attempt(self, t0: float, progress: Progress | None) -> bool:
        """One launch: True when healthy, False when its port was taken (retry)."""
        if self._sup is not None:
            await self.stop()
            self._stopped = False
        self.port = free_port(self.host)
        self.argv = with_address(self.base_argv, self.host, self.port)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{self.port}"
        log_start = self.log_path.stat().st_size
        try:
            self._sup = sup = Supervised(
                self.argv, log_path=self.log_path, env=self.env, grace=self.grace
            )
        except OSError as e:
            raise self.error(f"cannot start the watchdog: {e.strerror or e}", "cannot_start") from e
        foreign = False
        timeout = httpx.Timeout(2.0)
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            while True:
                sup.poll()
                if sup.error is not None:
                    kind, message = sup.error
                    what = "command not found" if kind == "not_found" else "cannot start"
                    raise self.error(f"{what}: {message}", kind)
                if sup.exit_code is not None or not sup.watchdog_alive():
                    await self.stop()
                    if PORT_TAKEN.search(self._log_since(log_start)):
                        return False
                    code = sup.exit_code
                    said = f"exited with code {code}" if code is not None else "ended"
                    raise self.error(f"{said} before it was healthy", "exited", code)
                elapsed = time.monotonic() - t0
                if progress is not None:
                    progress(elapsed, (self.log_tail(1) or [""])[0])
                if elapsed >= self.start_timeout:
                    what = f"not healthy after {self.start_timeout:g} s"
                    if foreign:
                        what += f" (port {self.port} answers, but not from this server)"
                    raise self.error(what, "timeout")
                if sup.pgid is not None and await self._healthy(client):
                    owned = group_listens(sup.pgid, self.port)
                    if owned is not False:
                        return True
                    foreign = True  # another program answers on our port: ours will fail to bind
                await asyncio.sleep(POLL_S)

    async def _healthy(self, client: httpx.AsyncClient) -> bool:
        try:
            r = await client.get(self.url + "/health")
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    # ---- while it runs ----

    def check_alive(self) -> None:
        """Raise `LaunchError` (kind "died") when the started server is no longer running."""
        sup = self._sup
        if sup is None or self._stopped:
            raise LaunchError(
                self.name, "the server is not running (never started, or stopped)", kind="usage"
            )
        if sup.server_running():
            return
        code = sup.exit_code
        said = f"exited with code {code}" if code is not None else "is gone"
        raise self.error(f"the server {said} while kltui was using it", "died", code)

    # ---- stop ----

    async def stop(self) -> None:
        """Stop the server's whole process group (SIGTERM, then SIGKILL after `grace` s) and
        wait until it is gone. Safe to call twice, and on a server that already exited."""
        sup = self._sup
        if sup is None:
            return
        self._stopped = True
        sup.terminate()
        deadline = time.monotonic() + self.grace + HARD_S + 2.0
        while sup.watchdog_alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        sup.poll()
        if sup.watchdog_alive() or sup.stopped is False:
            # the watchdog is stuck or could not end the group: finish the job from here
            await asyncio.to_thread(sup.kill)
        sup.close()

    async def __aenter__(self) -> LaunchedServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
