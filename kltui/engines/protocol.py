"""What every engine client offers (SGLangClient, VLLMClient): enough for the runner to check a
server is up, record who it is, and let go of it. What each engine can be asked beyond that
(generate, flush, completions) is its own client's."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kltui.engines.identity import EngineName, ServerIdentity


@runtime_checkable
class Engine(Protocol):
    """What every engine client offers the runner: health, identity and closing."""

    engine: EngineName  # RunStarted.servers[i]["engine"]
    url: str  # normalized base URL, the key of RunStarted.servers

    async def health(self) -> None:
        """Raise an EngineError unless the server answers its health check."""

    async def wait_healthy(self) -> None:
        """Wait, with retries, until the server is healthy."""

    async def identify(self) -> ServerIdentity:
        """Who the server is: the settings that decide what a number means (its `record()` is
        the server's entry of RunStarted.servers)."""
        ...

    async def aclose(self) -> None:
        """Release the client's connections."""
