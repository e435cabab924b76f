"""How the real-engine tier starts and stops servers: `scripts/real_engines.sh`, with this
process as each server's owner, so a server never outlives the test session that started it,
however the session ends (the watchdog in scripts/real_engines/supervisor.py stops it)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "real_engines.sh"
START_TIMEOUT = 600


def script(*args: str, timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )


class Servers:
    """Session-wide registry of started servers, so each is started once and always stopped."""

    def __init__(self) -> None:
        self.urls: dict[str, str] = {}
        self.startup_s: dict[str, float] = {}

    def get(self, name: str, engine: str, *flags: str, env: dict | None = None) -> str:
        if name not in self.urls:
            t0 = time.monotonic()
            env = {"KLTUI_ENGINES_OWNER": str(os.getpid()), **(env or {})}
            proc = script("start", engine, *flags, timeout=START_TIMEOUT, env=env)
            if proc.returncode != 0:
                pytest.fail(f"starting {engine} {' '.join(flags)} failed:\n{proc.stderr[-3000:]}")
            self.urls[name] = proc.stdout.strip().splitlines()[-1]
            self.startup_s[name] = time.monotonic() - t0
            print(f"[real] {name}: {self.urls[name]} in {self.startup_s[name]:.1f} s")
        return self.urls[name]

    def stop(self, name: str) -> None:
        url = self.urls.pop(name, None)
        if url is not None:
            script("stop", url, timeout=120)
            print(f"[real] {name}: stopped")

    def stop_all(self) -> None:
        for url in self.urls.values():
            script("stop", url, timeout=120)
        self.urls.clear()
