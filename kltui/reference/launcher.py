"""Start the reference server in a child process and wait until it serves.

    with ReferenceServer(deterministic=True, fault="stale-prefix") as srv:
        httpx.post(srv.url + "/generate", json=...)

The child runs `python -m kltui.reference serve --port 0 ...`, binds a free port on 127.0.0.1 and
announces it in its ready line. It watches its parent and exits when the parent dies. This module
imports no torch.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType

from kltui.reference.cli_entry import PARENT_PID_ENV, PDEATHSIG_ENV

READY = re.compile(r"^kltui reference server ready at (http://(\[[^\]]+\]|[^:/]+):(\d+))\s*$")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds kltui/


class ReferenceServerError(RuntimeError):
    pass


class ReferenceServer:
    def __init__(
        self,
        *,
        deterministic: bool = False,
        fault: str = "none",
        fault_window: int | None = None,
        page_size: int = 1,
        checkpoint: str | os.PathLike | None = None,
        incremental_streaming_output: bool = False,
        api_key: str | None = None,
        disable_radix_cache: bool = False,
        stream_interval: int | None = None,
        random_seed: int | None = None,
        host: str = "127.0.0.1",
        extra_args: tuple[str, ...] = (),
        startup_timeout: float = 60.0,
        env: dict[str, str] | None = None,
    ) -> None:
        args = ["--host", host, "--port", "0", "--fault", fault, "--page-size", str(page_size)]
        switches = {
            "--deterministic": deterministic,
            "--incremental-streaming-output": incremental_streaming_output,
            "--disable-radix-cache": disable_radix_cache,
        }
        args += [flag for flag, on in switches.items() if on]
        valued = {
            "--fault-window": fault_window,
            "--checkpoint": checkpoint,
            "--api-key": api_key,
            "--stream-interval": stream_interval,
            "--random-seed": random_seed,
        }
        for flag, value in valued.items():
            if value is not None:
                args += [flag, str(value)]
        self.argv = [sys.executable, "-m", "kltui.reference", "serve", *args, *extra_args]
        self.startup_timeout = startup_timeout
        self._extra_env = dict(env or {})
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: tempfile._TemporaryFileWrapper | None = None
        self.url = ""
        self.host = host
        self.port = 0
        self.startup_seconds = 0.0
        self.stderr_tail_before_stop = ""

    @property
    def host_port(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> ReferenceServer:
        if self._proc is not None:
            raise ReferenceServerError("this ReferenceServer was already started")
        env = {**os.environ, **self._extra_env, PARENT_PID_ENV: str(os.getpid())}
        # PR_SET_PDEATHSIG follows the forking thread; only the main thread lives as long as us.
        env[PDEATHSIG_ENV] = "1" if threading.current_thread() is threading.main_thread() else "0"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
        )
        self._stderr = tempfile.TemporaryFile(mode="w+", prefix="kltui-reference-", suffix=".log")
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(
            target=_pump,
            args=(self._proc.stdout, lines),
            name="kltui-reference-stdout",
            daemon=True,
        ).start()
        deadline = t0 + self.startup_timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, min(0.5, deadline - time.perf_counter())))
            except queue.Empty:
                line = ""
            if line is None or (line == "" and self._proc.poll() is not None):
                proc = self._proc
                self.stop()  # reaps it (and kills it, should it linger after closing stdout)
                tail = self.stderr_tail_before_stop
                raise ReferenceServerError(
                    f"the reference server exited with code {proc.returncode} before it was "
                    f"ready:\n{tail}"
                )
            m = READY.match(line.strip()) if line else None
            if m:
                self.url = m.group(1)
                self.port = int(m.group(3))
                self.startup_seconds = time.perf_counter() - t0
                return self
            if time.perf_counter() >= deadline:
                self.stop()
                tail = self.stderr_tail_before_stop
                raise ReferenceServerError(
                    f"the reference server was not ready after {self.startup_timeout:g} s:\n{tail}"
                )

    def stderr_tail(self, lines: int = 40) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return "".join(self._stderr.readlines()[-lines:])

    def stop(self, timeout: float = 5.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._stderr is not None:
            self.stderr_tail_before_stop = self.stderr_tail()
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> ReferenceServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> ReferenceServer:
        import asyncio

        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        import asyncio

        await asyncio.to_thread(self.stop)


def _pump(stream, lines: queue.Queue) -> None:
    """Read the child's stdout for the ready line, then keep draining so it never blocks."""
    try:
        for line in stream:
            lines.put(line)
    except (ValueError, OSError):  # closed by stop()
        pass
    lines.put(None)
