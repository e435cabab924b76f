"""Headless Chromium driven over the DevTools protocol (with aiohttp, which the `web` extra
brings): navigate, press keys, take screenshots, and read what the page received over its
websockets, which is the terminal stream the page draws (xterm.js paints on a canvas, so the
screen's text is not in the DOM)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import aiohttp

from tests.chromium import CHROMIUM, HEADLESS

_CSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>78]")


class Browser:
    def __init__(self, profile: Path, size: tuple[int, int] = (1600, 1000)) -> None:
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *HEADLESS,
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        self.devtools = ""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            if m := re.search(r"DevTools listening on (ws://[^\s]+)", line):
                self.devtools = m.group(1)
                break
        if not self.devtools:
            self.close()
            raise RuntimeError("chromium did not open its DevTools port")
        port = int(re.search(r":(\d+)/", self.devtools).group(1))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        self.page_ws = pages[0]["webSocketDebuggerUrl"]

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


class Page:
    """One CDP session on the browser's page; collects websocket frames as they arrive."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.n = 0
        self.received = bytearray()  # everything the page's websockets received
        self.sent: list[str] = []

    async def call(self, method: str, **params) -> dict:
        self.n += 1
        mine = self.n
        await self.ws.send_json({"id": mine, "method": method, "params": params})
        while True:
            msg = await self._next(60)
            if msg.get("id") == mine:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def _next(self, timeout: float) -> dict:
        msg = await asyncio.wait_for(self.ws.receive(), timeout)
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise RuntimeError(f"DevTools connection closed: {msg.type}")
        data = json.loads(msg.data)
        method = data.get("method")
        if method == "Network.webSocketFrameReceived":
            frame = data["params"]["response"]
            payload = frame["payloadData"]
            self.received += base64.b64decode(payload) if frame["opcode"] == 2 else payload.encode()
        elif method == "Network.webSocketFrameSent":
            self.sent.append(data["params"]["response"]["payloadData"])
        return data

    def text(self, since: int = 0) -> str:
        """The terminal stream (from byte `since` on), escape sequences removed."""
        return _CSI.sub(b"", bytes(self.received[since:])).decode("utf-8", "replace")

    async def wait_for(self, cond, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                tail = self.text()[-3000:]
                raise AssertionError(
                    f"{what}: not seen within {timeout:.0f} s; the page got:\n{tail}"
                )
            try:
                await self._next(min(left, 1.0))
            except TimeoutError:
                continue

    async def press(self, key: str, code: str, vk: int, shift: bool = False) -> None:
        mods = 8 if shift else 0
        common = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": mods}
        await self.call("Input.dispatchKeyEvent", type="keyDown", text=key, **common)
        await self.call("Input.dispatchKeyEvent", type="keyUp", **common)

    async def screenshot(self) -> bytes:
        shot = await self.call("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])
