"""The reference servers this tier tests, by name: each the session's shared server of its
configuration (tests/conftest.py's `reference_servers`), with a fixed sampling seed."""

from __future__ import annotations

import pytest

from kltui.reference.launcher import ReferenceServer
from tests.reference.kit import PROMPTS, RefClient
from tests.servers import ReferenceServers


def _serve(pool: ReferenceServers, **kwargs) -> ReferenceServer:
    """The shared server of this configuration, sampling with seed 0."""
    return pool.server(random_seed=0, **kwargs)


@pytest.fixture(scope="session")
def default_server(reference_servers) -> ReferenceServer:
    return _serve(reference_servers)


@pytest.fixture(scope="session")
def det_server(reference_servers) -> ReferenceServer:
    # Page size 4 as well: bit identity must hold with page-rounded hits, and one server less
    # keeps the suite fast.
    return _serve(reference_servers, deterministic=True, page_size=4)


@pytest.fixture(scope="session")
def stale_server(reference_servers) -> ReferenceServer:
    return _serve(reference_servers, deterministic=True, fault="stale-prefix")


@pytest.fixture(scope="session")
def window_server(reference_servers) -> ReferenceServer:
    return _serve(reference_servers, deterministic=True, fault="window-evict", fault_window=40)


@pytest.fixture(scope="session")
def incremental_server(reference_servers) -> ReferenceServer:
    return _serve(reference_servers, incremental_streaming_output=True, api_key="s3cret")


@pytest.fixture(scope="session")
def client(default_server) -> RefClient:
    return RefClient(default_server)


@pytest.fixture(scope="session")
def prompts(client) -> list[list[int]]:
    return client.tokenize(PROMPTS)
