"""Several event streams as one: at most `limit` of them running at once, each event yielded
as soon as its stream makes it. A fleet run checks its workers this way; with limit 1 the
streams run one after the other, as a run over several servers always did."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from kltui.errors import UsageError
from kltui.session.events import Event, Problem

T = TypeVar("T")
_DONE = object()


class _Failed:
    """A stream raised: the merge re-raises it in the consumer."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


async def bounded_merge(
    makers: list[Callable[[], AsyncIterator[T]]], limit: int
) -> AsyncIterator[T]:
    """Every event of every stream `makers[i]()` starts, at most `limit` streams at once.

    A stream that raises stops the merge with that exception (the others are cancelled), as
    one failing loop would; faults a stream reports as events do not stop the others."""
    if limit <= 1 or len(makers) <= 1:
        for make in makers:
            async for ev in make():
                yield ev
        return
    queue: asyncio.Queue[object] = asyncio.Queue()
    gate = asyncio.Semaphore(limit)

    async def pump(make: Callable[[], AsyncIterator[T]]) -> None:
        async with gate:
            try:
                async for ev in make():
                    await queue.put(ev)
            except Exception as e:  # noqa: BLE001 - handed to the consumer, which re-raises it
                await queue.put(_Failed(e))
            finally:
                await queue.put(_DONE)

    tasks = [asyncio.create_task(pump(m)) for m in makers]
    left = len(tasks)
    try:
        while left:
            item = await queue.get()
            if item is _DONE:
                left -= 1
            elif isinstance(item, _Failed):
                raise item.exc
            else:
                yield item  # type: ignore[misc]
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def guarded(server: str, stream: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """`stream`, with a fault that is not bad input turned into one fatal Problem of `server`,
    so that a server that breaks in an unforeseen way does not stop the others of its run
    (bad input, a UsageError, is wrong for every server and still stops the run)."""
    try:
        async for ev in stream:
            yield ev
    except UsageError:
        raise
    except Exception as e:  # noqa: BLE001 - one server's fault must not end the others
        yield Problem(server, f"{type(e).__name__}: {e}", fatal=True, phase="run")
