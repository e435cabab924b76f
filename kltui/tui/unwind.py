"""Waiting for a feed's worker to unwind after it was cancelled (a sweep's servers stopped, a
monitor's probe cut short and recorded), shared by the sweep's and the monitor's feeds."""

from __future__ import annotations

import asyncio


async def unwound(done: asyncio.Event | None, timeout: float) -> bool:
    """Wait until `done` is set (None: nothing ran); False when it took longer than `timeout`
    seconds."""
    if done is None or done.is_set():
        return True
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except TimeoutError:
        return False
    return True
