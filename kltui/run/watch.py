"""--watch: notice a server restart (new start time or identity) while idle, so the app can
re-run on the fresh server, as one does after rebuilding an engine with a fix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kltui.engines.errors import EngineError
from kltui.engines.identity import ServerIdentity
from kltui.engines.sglang import PROCESS_IDENTITY, SGLangClient

POLL_INTERVAL_S = 3.0


def identity(info: Mapping[str, Any] | ServerIdentity) -> tuple:
    """What identifies a server process (changes when it restarts): from its server_info or
    its recorded identity."""
    return tuple(info.get(k) for k in PROCESS_IDENTITY)


class ServerWatch:
    """Polls servers between runs of --watch for restarts and outages."""

    def __init__(self, urls: list[str], api_key: str | None = None) -> None:
        """Watches `urls` with `api_key`: the run's own, RunConfig.server_api_key() (a client
        without it would get 401 from a healthy server and report it down forever)."""
        clients = [SGLangClient(u, api_key, timeout=5.0, connect_timeout=2.0) for u in urls]
        self.clients = {c.url: c for c in clients}  # keyed like RunStarted.servers
        self.baseline: dict[str | None, tuple | None] = {}

    def remember(self, servers: list[ServerIdentity]) -> None:
        """The identities the last run saw (None for a server that was down)."""
        self.baseline = {s.url: (None if s.error else identity(s)) for s in servers}

    async def poll(self) -> tuple[list[str], list[str]]:
        """(servers that restarted or came back, servers that are down now)."""
        changed, down = [], []
        for url, client in self.clients.items():
            try:
                info = await client.server_info()
            except EngineError:
                down.append(url)
                continue
            before = self.baseline.get(url)
            if before is None or identity(info) != before:
                changed.append(url)
        return changed, down

    async def aclose(self) -> None:
        """Close the clients."""
        for c in self.clients.values():
            await c.aclose()
