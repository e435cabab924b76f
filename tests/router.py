"""The real SGLang router (`sglang-router` from PyPI, the test extra) on 127.0.0.1, in front of
given workers, started and stopped as the tests start the reference servers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Router:
    """`python -m sglang_router.launch_router --worker-urls URL... --port P` on loopback;
    ready once its GET /workers lists every worker as healthy."""

    def __init__(self, worker_urls: list[str], *, extra: tuple[str, ...] = ()) -> None:
        self.workers = list(worker_urls)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.argv = [
            sys.executable,
            "-m",
            "sglang_router.launch_router",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--worker-urls",
            *self.workers,
            "--log-level",
            "warn",
            # its metrics listener defaults to port 29000: one per router, or a second one dies
            "--prometheus-host",
            "127.0.0.1",
            "--prometheus-port",
            str(free_port()),
            *extra,
        ]
        self._proc: subprocess.Popen | None = None
        self._log = tempfile.TemporaryFile(prefix="kltui-router-", suffix=".log")

    def log_tail(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-3000:]

    def start(self, timeout: float = 90.0) -> Router:
        # the router reads no proxy settings we want: loopback only
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        self._proc = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=env
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"the router exited with code {self._proc.returncode}:\n{self.log_tail()}"
                )
            try:
                doc = httpx.get(self.url + "/workers", timeout=2).json()
                healthy = {w["url"] for w in doc["workers"] if w.get("is_healthy")}
                if healthy >= {u.rstrip("/") for u in self.workers}:
                    return self
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the router was not ready after {timeout:g} s:\n{self.log_tail()}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def __enter__(self) -> Router:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        self._log.close()
