"""Shared by every test tier: the servers tests run against (one reference-server factory, one
hostile-server factory: tests/servers.py), and each `--json` document written in-process goes
through `kltui.session.jsonfile.write_json_document`, validated here against the schema it names
(tests/json_contract.py) before it is written."""

from __future__ import annotations

import pytest

from kltui.engines.http import HttpEngine
from tests.hostile.server import HostileServer
from tests.json_contract import validate
from tests.servers import ReferenceServers


@pytest.fixture(scope="session")
def reference_servers():
    """The session's reference servers: `reference_servers.url(deterministic=True)` is the
    shared server of that configuration (ReferenceServer's keyword arguments), started on
    first use; `reference_servers.own(...)` a private one the test may stop."""
    pool = ReferenceServers()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def hostile():
    """Factory: `srv = hostile(fault="reset-mid-stream", phase="decode")` starts a hostile
    server (tests/hostile/server.py) that is stopped when the test ends."""
    started: list[HostileServer] = []

    def make(**kw) -> HostileServer:
        srv = HostileServer(**kw).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture
def fast_backoff(monkeypatch):
    """In-process runs count retries; waiting the real backoff would only slow the suite (the
    hostile tier's subprocess tests run with the real delays, and one of them checks them)."""
    monkeypatch.setattr(HttpEngine, "retry_base_delay", 0.01)


@pytest.fixture(autouse=True)
def _json_documents_follow_their_schema(monkeypatch):
    from kltui.session import jsonfile
    from kltui.session.codec import tag_floats

    original = jsonfile.write_json_document

    def checked(path, doc, schema):
        validate(tag_floats(doc), schema)
        return original(path, doc, schema)

    monkeypatch.setattr(jsonfile, "write_json_document", checked)
