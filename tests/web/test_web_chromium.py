"""`kltui web` in a real browser: headless Chromium opens the served dashboard of a live run on
the reference server, the heatmap's cells and the helpers' results arrive and are drawn, and a
key pressed in the page reaches the app.

Needs Chromium (Debian: `apt-get install -y chromium`); skipped with that reason without it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import aiohttp
import numpy as np
import pytest

from kltui.reference.launcher import ReferenceServer
from kltui.tui.themes import VARIABLE_DEFAULTS
from tests.reports.pngread import read_png
from tests.web.cdp import CHROMIUM, Page

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)
HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def reference_url():
    with ReferenceServer(deterministic=True) as srv:
        yield srv.url


class WebServer:
    """`kltui web ...` on 127.0.0.1 and a free port; its process group (the web server and
    the dashboards it started) is ended at teardown."""

    def __init__(self, tmp_path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "KLTUI_RUNS_DIR": str(tmp_path / "runs")}
        cmd = [sys.executable, "-m", "kltui", "web", "--port", str(self.port), *args]
        self.log = open(tmp_path / "web.log", "w+")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    self.index = r.read().decode()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"kltui web did not come up:\n{self.output()}") from None
                time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        try:  # the dashboards started for browser tabs share the group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.close()


@pytest.fixture
def served(tmp_path, reference_url):
    web = WebServer(
        tmp_path,
        "--server",
        reference_url,
        "--samples",
        "4",
        "--max-new-tokens",
        "16",
        "--max-prompt-tokens",
        "64",
        "--no-record",
    )
    try:
        yield web
    finally:
        web.stop()


async def test_live_dashboard_in_chromium(served, browser):
    assert 'class="textual-terminal"' in served.index
    async with aiohttp.ClientSession() as http, http.ws_connect(browser.page_ws) as ws:
        page = Page(ws)
        await page.call("Network.enable")
        await page.call("Page.enable")
        await page.call("Page.navigate", url=served.url)
        # the run against the reference server finishes in the page: every helper's result
        # line, and the verdict of a deterministic server
        # ("#1" is the run's row in the history panel, drawn when the run has finished)
        await page.wait_for(
            lambda: "#1" in page.text() and all(h in page.text() for h in HELPERS),
            240,
            "the finished run in the page",
        )
        await asyncio.sleep(2.0)  # let the last frames be painted
        text = page.text()
        assert "PASS" in text and "pass" in text.split("#1", 1)[1][:40], text[-3000:]
        assert "avg_kl_div" in text, text[-3000:]
        # the heatmap's cells: exact zero everywhere on a deterministic server, drawn as the
        # theme's exact-zero colour, which nothing else on the dashboard uses
        zero = VARIABLE_DEFAULTS["heat-zero"].lstrip("#")
        rgb = tuple(int(zero[i : i + 2], 16) for i in (0, 2, 4))
        assert f"48;2;{rgb[0]};{rgb[1]};{rgb[2]}".encode() in page.received
        pixels = read_png(await page.screenshot())[..., :3]
        cells = int(np.all(pixels == np.array(rgb, dtype=np.uint8), axis=-1).sum())
        assert cells > 2000, cells
        # a key pressed in the page reaches the app: `?` opens the help screen
        await page.call(
            "Runtime.evaluate",
            expression="document.querySelector('.xterm-helper-textarea').focus()",
        )
        assert "kltui help" not in page.text()
        before = len(page.received)
        await page.press("?", "Slash", 191, shift=True)
        await page.wait_for(
            lambda: "kltui help" in page.text(since=before), 30, "the help screen after ?"
        )
        assert any('"stdin"' in s and "?" in s for s in page.sent)
