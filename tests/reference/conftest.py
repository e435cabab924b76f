"""Real reference servers: child processes on 127.0.0.1, one per configuration, started on first
use and shared by the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kltui.reference.launcher import ReferenceServer
from tests.reference.kit import PROMPTS, RefClient


def _serve(**kwargs) -> Iterator[ReferenceServer]:
    with ReferenceServer(random_seed=0, **kwargs) as server:
        yield server


@pytest.fixture(scope="session")
def default_server() -> Iterator[ReferenceServer]:
    yield from _serve()


@pytest.fixture(scope="session")
def det_server() -> Iterator[ReferenceServer]:
    # Page size 4 as well: bit identity must hold with page-rounded hits, and one server less
    # keeps the suite fast.
    yield from _serve(deterministic=True, page_size=4)


@pytest.fixture(scope="session")
def stale_server() -> Iterator[ReferenceServer]:
    yield from _serve(deterministic=True, fault="stale-prefix")


@pytest.fixture(scope="session")
def window_server() -> Iterator[ReferenceServer]:
    yield from _serve(deterministic=True, fault="window-evict", fault_window=40)


@pytest.fixture(scope="session")
def incremental_server() -> Iterator[ReferenceServer]:
    yield from _serve(incremental_streaming_output=True, api_key="s3cret")


@pytest.fixture(scope="session")
def client(default_server) -> RefClient:
    return RefClient(default_server)


@pytest.fixture(scope="session")
def prompts(client) -> list[list[int]]:
    return client.tokenize(PROMPTS)
