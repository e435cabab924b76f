"""How the real-engine tier starts and stops servers: `scripts/real_engines.sh`, with this
process as each server's owner, so a server never outlives the test session that started it,
however the session ends (the watchdog in kltui/launch/supervisor.py stops it)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "real_engines.sh"
START_TIMEOUT = 600


def say(config: pytest.Config, line: str) -> None:
    """One line on the terminal now, even under `pytest -q` with output captured: a build or a
    server start that runs for minutes must not look like a hang."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        # a pytest-xdist worker's terminal reporter writes where nobody reads; its stderr is
        # the terminal's
        if tr is None or os.environ.get("PYTEST_XDIST_WORKER"):
            print(line, file=sys.__stderr__, flush=True)
            return
        tr.write_line(line)
        tr.flush()


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
    """Session-wide registry of started servers, so each is started once and always stopped.
    Every start and stop is announced as it happens (`announce`: a line on the terminal)."""

    def __init__(self, announce: Callable[[str], None] = print) -> None:
        self.urls: dict[str, str] = {}
        self.startup_s: dict[str, float] = {}
        self.announce = announce

    def get(self, name: str, engine: str, *flags: str, env: dict | None = None) -> str:
        """The URL of server `name`, started now (`real_engines.sh start`) unless it runs."""
        if name not in self.urls:
            t0 = time.monotonic()
            what = " ".join((engine, *flags))
            self.announce(f"[real] {name}: starting {what} (a minute or more)")
            env = {"KLTUI_ENGINES_OWNER": str(os.getpid()), **(env or {})}
            proc = script("start", engine, *flags, timeout=START_TIMEOUT, env=env)
            if proc.returncode != 0:
                self.announce(f"[real] {name}: failed to start after {time.monotonic() - t0:.0f} s")
                pytest.fail(f"starting {what} failed:\n{proc.stderr[-3000:]}")
            self.urls[name] = proc.stdout.strip().splitlines()[-1]
            self.startup_s[name] = time.monotonic() - t0
            self.announce(f"[real] {name}: up at {self.urls[name]} in {self.startup_s[name]:.1f} s")
        return self.urls[name]

    def stop(self, name: str) -> None:
        """Stop server `name` if it runs."""
        url = self.urls.pop(name, None)
        if url is not None:
            t0 = time.monotonic()
            script("stop", url, timeout=120)
            self.announce(f"[real] {name}: stopped ({url}) in {time.monotonic() - t0:.1f} s")

    def stop_all(self) -> None:
        """Stop every server still running."""
        for name in list(self.urls):
            self.stop(name)
