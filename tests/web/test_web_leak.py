"""A browser tab closed in the middle of a run leaves no process behind, and `kltui web`
stopping ends the dashboards of the tabs still open (issue 21: a closed tab once left its
dashboard spinning for minutes, deaf to SIGINT and SIGTERM).

Needs Chromium (Debian: `apt-get install -y chromium`); skipped with that reason without it."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import aiohttp
import pytest

from tests.web.cdp import CHROMIUM, Browser, Page
from tests.web.webserver import WebServer

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)
# long enough that the run is still going when the tab closes
RUN = ("--samples", "32", "--max-new-tokens", "256", "--max-prompt-tokens", "64", "--no-record")


def dashboards(web: WebServer) -> list[str]:
    """The processes `kltui web` started for browser tabs (its process group, less itself)."""
    out = subprocess.run(
        ["ps", "-o", "pid=,pgid=,stat=,args=", "-e"], capture_output=True, text=True, check=True
    ).stdout
    rows = [line.split(None, 3) for line in out.splitlines()]
    return [
        " ".join(r)
        for r in rows
        if len(r) == 4
        and r[1] == str(web.proc.pid)
        and r[0] != str(web.proc.pid)
        and not r[2].startswith("Z")
    ]


def wait_gone(web: WebServer, seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := dashboards(web)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


async def open_tab(web: WebServer, browser: Browser, http: aiohttp.ClientSession) -> Page:
    ws = await http.ws_connect(browser.page_ws)
    page = Page(ws)
    await page.call("Network.enable")
    await page.call("Page.enable")
    await page.call("Page.navigate", url=web.url)
    # the run is under way: a helper is decoding
    await page.wait_for(lambda: "decode" in page.text(), 240, "a helper decoding in the page")
    assert dashboards(web), "no dashboard process for the open tab"
    return page


@pytest.fixture
def web(tmp_path, reference_url):
    server = WebServer(tmp_path, "--read-only", "--server", reference_url, *RUN)
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("close", ["tab", "browser"])
async def test_closing_the_tab_mid_run_leaves_no_process(web, browser, close):
    async with aiohttp.ClientSession() as http:
        page = await open_tab(web, browser, http)
        if close == "tab":
            await page.call("Page.close")
        else:  # the browser dies without a goodbye: the websocket just drops
            browser.close()
    left = wait_gone(web, 10)
    assert not left, f"still running 10 s after the tab closed: {left}\n{web.output()[-3000:]}"
    assert web.proc.poll() is None, "kltui web itself must keep serving"


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGKILL"])
async def test_stopping_kltui_web_ends_the_open_tabs_dashboards(web, browser, sig):
    async with aiohttp.ClientSession() as http:
        await open_tab(web, browser, http)
        # the server alone (Ctrl+C, its terminal closed, or killed), not its process group
        os.kill(web.proc.pid, getattr(signal, sig))
        web.proc.wait(timeout=15)  # it used to wait a minute for the tab to close
        left = wait_gone(web, 10)
    assert not left, f"still running after kltui web stopped: {left}\n{web.output()[-3000:]}"
