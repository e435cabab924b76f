"""The servers every test tier starts, in one place (the fixtures are in tests/conftest.py):
kltui's embedded reference server (real torch model, radix cache, HTTP on 127.0.0.1 and a free
port) and the hostile server of tests/hostile/server.py."""

from __future__ import annotations

import inspect
from typing import Any

from kltui.reference.launcher import ReferenceServer


class ReferenceServers:
    """The session's reference servers: one per configuration, started on first use and shared
    by every test that asks for that configuration; private ones for a test that stops or kills
    its server. Everything still running is stopped at close()."""

    def __init__(self) -> None:
        self._shared: dict[tuple, ReferenceServer] = {}
        self._own: list[ReferenceServer] = []

    @staticmethod
    def _key(kw: dict[str, Any]) -> tuple:
        """One key per configuration, defaults filled in: `server()` and
        `server(page_size=1)` are the same server."""
        bound = inspect.signature(ReferenceServer).bind(**kw)
        bound.apply_defaults()
        return tuple(sorted((k, repr(v)) for k, v in bound.arguments.items()))

    def server(self, **kw: Any) -> ReferenceServer:
        """The shared server of this configuration (ReferenceServer's keyword arguments)."""
        key = self._key(kw)
        if key not in self._shared:
            self._shared[key] = ReferenceServer(**kw).start()
        return self._shared[key]

    def url(self, **kw: Any) -> str:
        """The base URL of the shared server of this configuration."""
        return self.server(**kw).url

    def own(self, **kw: Any) -> ReferenceServer:
        """A started server for one test (or module) alone, which it may stop or kill; stopped
        at close() if it is still running."""
        srv = ReferenceServer(**kw).start()
        self._own.append(srv)
        return srv

    def close(self) -> None:
        """Stop every server started here."""
        for srv in [*self._shared.values(), *self._own]:
            srv.stop()
        self._shared.clear()
        self._own.clear()
