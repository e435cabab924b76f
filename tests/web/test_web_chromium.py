"""`kltui web` in a real browser: headless Chromium opens the served dashboard of a live run on
the reference server, the heatmap's cells and the helpers' results arrive and are drawn, and a
key pressed in the page reaches the app.

Needs Chromium (Debian: `apt-get install -y chromium`); skipped with that reason without it."""

from __future__ import annotations

import time

import aiohttp
import numpy as np
import pytest

from kltui.tui.themes import VARIABLE_DEFAULTS
from kltui.words.web import tab_runs
from tests.reports.pngread import read_png
from tests.web.cdp import CHROMIUM, Page
from tests.web.webserver import WebServer

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)
HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")


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
        def finished() -> bool:
            text = page.text()
            return (
                "#1" in text
                and all(h in text for h in HELPERS)
                and "avg_kl_div" in text
                and "PASS" in text
                and "pass" in text.split("#1", 1)[1][:40]
            )

        await page.wait_for(finished, 240, "the finished run, passed, in the page")
        # the heatmap's cells: exact zero everywhere on a deterministic server, drawn as the
        # theme's exact-zero colour, which nothing else on the dashboard uses
        zero = VARIABLE_DEFAULTS["heat-zero"].lstrip("#")
        rgb = tuple(int(zero[i : i + 2], 16) for i in (0, 2, 4))
        assert f"48;2;{rgb[0]};{rgb[1]};{rgb[2]}".encode() in page.received

        async def zero_pixels() -> int:
            pixels = read_png(await page.screenshot())[..., :3]
            return int(np.all(pixels == np.array(rgb, dtype=np.uint8), axis=-1).sum())

        # the frames received are painted on the browser's next animation frames: screenshots
        # until the cells are there (each takes a while), up to a deadline
        deadline = time.monotonic() + 30
        while (cells := await zero_pixels()) <= 2000 and time.monotonic() < deadline:
            pass
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


async def test_a_sweep_folder_served_read_only_shows_its_matrix(tmp_path, browser):
    # `kltui web --read-only replay FOLDER`: a reviewer's tab gets the ablation matrix of a
    # real reference-server sweep, not the console table the tab's pipes would otherwise get
    import shutil
    from pathlib import Path

    sweep = tmp_path / "ablate-1"
    shutil.copytree(Path(__file__).parents[1] / "tui" / "data" / "sweep", sweep)
    web = WebServer(tmp_path, "--read-only", "replay", str(sweep))
    try:
        async with aiohttp.ClientSession() as http, http.ws_connect(browser.page_ws) as ws:
            page = Page(ws)
            await page.call("Network.enable")
            await page.call("Page.enable")
            await page.call("Page.navigate", url=web.url)
            names = ("base", "deterministic=on", "cuda-graph=off", "page-size=0")
            await page.wait_for(
                lambda: all(n in page.text() for n in names) and "measured" in page.text(),
                120,
                "the sweep's configurations in the served matrix",
            )
        assert tab_runs(["replay", str(sweep), "--read-only"]) in web.output()
    finally:
        web.stop()
