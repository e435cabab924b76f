"""Real reference servers (torch model, radix cache, HTTP on 127.0.0.1), one per configuration,
started on first use and stopped at the end of the session."""

from __future__ import annotations

import pytest

from kltui.reference.launcher import ReferenceServer


class ServerPool:
    def __init__(self) -> None:
        self.servers: dict[tuple, ReferenceServer] = {}

    def get(self, *, deterministic: bool = False, fault: str = "none", **kw) -> str:
        key = (deterministic, fault, tuple(sorted(kw.items())))
        if key not in self.servers:
            srv = ReferenceServer(deterministic=deterministic, fault=fault, **kw)
            srv.__enter__()
            self.servers[key] = srv
        return self.servers[key].url

    def close(self) -> None:
        for srv in self.servers.values():
            srv.__exit__(None, None, None)


@pytest.fixture(scope="session")
def ref_servers():
    pool = ServerPool()
    yield pool
    pool.close()
