"""The start of a run asks every server at once: SGLang's /health answers after a second or
more (a one-token generate it polls for once a second), so one server after another made a
fleet of N replicas wait N seconds. Here each stand-in client's health check holds until every
client has asked: one after another, the first would wait for ever."""

import asyncio

import pytest

from kltui.engines.errors import EngineError
from kltui.engines.identity import ServerIdentity
from kltui.run.config import RunConfig
from kltui.run.runner import _connect

URLS = ["http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"]


class Waiting:
    """A client whose health check returns once all `n` clients are inside theirs."""

    inside = 0
    all_in: asyncio.Event

    def __init__(self, url: str, n: int, down: bool = False) -> None:
        self.url, self.n, self.down = url, n, down

    async def wait_healthy(self) -> None:
        Waiting.inside += 1
        if Waiting.inside == self.n:
            Waiting.all_in.set()
        await asyncio.wait_for(Waiting.all_in.wait(), 5)
        if self.down:
            raise EngineError(self.url, f"{self.url}: connection refused", "unreachable")

    async def identify_with_info(self, model_config=None) -> tuple[ServerIdentity, dict]:
        port = int(self.url.rsplit(":", 1)[1])
        info = {"url": self.url, "engine": "sglang", "model_path": "/m", "port": port,
                "startup_time": float(port)}  # fmt: skip
        return ServerIdentity.of(info), info


@pytest.fixture
def fresh():
    Waiting.inside = 0
    Waiting.all_in = asyncio.Event()


async def test_every_server_is_identified_at_once_and_kept_in_order(fresh):
    clients = [Waiting(u, len(URLS), down=(u == URLS[1])) for u in URLS]
    cfg = RunConfig(servers=URLS, allow_different_models=True)
    found = await asyncio.wait_for(_connect(cfg, clients), 10)  # type: ignore[arg-type]
    assert [s["url"] for s in found.servers] == URLS
    assert set(found.infos) == {URLS[0], URLS[2]}
    assert [p.source for p in found.problems] == [URLS[1]]
    assert found.problems[0].phase == "connect" and found.problems[0].fatal
