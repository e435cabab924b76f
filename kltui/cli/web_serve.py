"""textual-serve's Server, made to end the dashboards it started when it stops.

Alone, a stopping textual-serve waits up to a minute for each open tab's websocket to close,
and only then asks its dashboard to quit; killed (or its terminal closed), it asks nothing at
all. Here a stop asks every dashboard to quit at once, kills the ones still running
STOP_GRACE_S seconds later, and closes the tabs' websockets; SIGHUP stops it like SIGINT.
(A dashboard whose server was killed outright exits by itself: kltui.tui.webdriver.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import Any

from textual_serve.server import Server

STOP_GRACE_S = 5.0


class StoppingServer(Server):
    """A Server that stops the dashboards of the tabs still open when it stops."""

    def __init__(self, *args, verbose: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._open: dict[object, Any] = {}  # app service -> its tab's websocket
        self.verbose = verbose

    def initialize_logging(self) -> None:
        """textual-serve's logging, without aiohttp's access log unless `verbose`: at INFO it
        prints several lines per HTTP request (every asset of every tab), burying kltui's own
        lines."""
        super().initialize_logging()
        level = logging.INFO if self.verbose else logging.WARNING
        logging.getLogger("aiohttp.access").setLevel(level)

    async def _process_messages(self, websocket, app_service) -> None:
        self._open[app_service] = websocket
        try:
            await super()._process_messages(websocket, app_service)
        finally:
            self._open.pop(app_service, None)

    async def on_startup(self, app) -> None:
        """Start serving, stopping on SIGHUP too."""
        await super().on_startup(app)
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.request_exit)

    async def on_shutdown(self, app) -> None:
        """Stop every open dashboard and close its websocket."""
        open_now = list(self._open.items())
        await asyncio.gather(*(_stop(service) for service, _ in open_now))
        for _, websocket in open_now:
            with contextlib.suppress(Exception):
                await websocket.close()


async def _stop(service) -> None:
    """Ask one dashboard to quit; kill it if it has not STOP_GRACE_S seconds later."""
    process = getattr(service, "_process", None)
    if process is None or process.returncode is not None:
        return
    with contextlib.suppress(Exception):
        await service.send_meta({"type": "quit"})
    try:
        await asyncio.wait_for(process.wait(), STOP_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
