"""Feeds one event stream to the store, the recorder and a view, in that order, so the
recording always holds at least what any view has shown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from kltui.session.events import Event, RunFinished, RunVerdict
from kltui.session.store import SessionStore


class EventWriter(Protocol):
    """Where pump records each event: a `Recorder`, or the TUI's `LazyRecorder`."""

    def write(self, event: Event, /) -> None:
        """Record one event."""


async def pump(
    events: AsyncIterator[Event],
    store: SessionStore,
    recorder: EventWriter | None,
    on_event: Callable[[Event], None] | None = None,
) -> None:
    """Runs the stream to its end; on cancellation records an `interrupted` RunFinished."""
    try:
        async for ev in events:
            if recorder is not None:
                recorder.write(ev)
            store.apply(ev)
            if on_event is not None:
                on_event(ev)
    except asyncio.CancelledError:
        _finish(
            RunFinished({"interrupted": True}, RunVerdict.INTERRUPTED), store, recorder, on_event
        )
        raise
    except Exception as e:
        # A bad input file found mid-run (UsageError) or a bug: the recording and views still
        # get an end, and say "error" rather than "interrupted".
        _finish(
            RunFinished({"error": type(e).__name__}, RunVerdict.ERROR), store, recorder, on_event
        )
        raise


def _finish(
    ev: RunFinished,
    store: SessionStore,
    recorder: EventWriter | None,
    on_event: Callable[[Event], None] | None,
) -> None:
    if store.finished is not None:
        return
    if recorder is not None:
        recorder.write(ev)
    store.apply(ev)
    if on_event is not None:
        on_event(ev)
