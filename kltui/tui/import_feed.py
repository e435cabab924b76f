"""An imported file (`kltui FILE`, `kltui import FILE --tui`) into the app: the import's event
stream (rl/stream.py) through `consume.pump`, as a replay's recording goes, so the dashboard
fills in while the file is read. Not live: nothing is re-run on a server from here."""

from __future__ import annotations

import asyncio
import os

from kltui.importer.reader import Source, open_source
from kltui.rl.stream import ImportOptions, import_events, label_of
from kltui.run.reopen import NotFetched
from kltui.session.consume import pump
from kltui.session.events import Event
from kltui.session.store import HelperState, SessionStore
from kltui.tui.feeds import ReplayFeed


class ImportFeed(ReplayFeed):
    """The file read into the app, as a replay is (not live: no re-runs, no flushes); read
    again from the start on a restart. A ReplayFeed whose events come from the file instead of
    a recording (its pacing, recording and clock are not used)."""

    mode = "replay"

    def __init__(self, path: str, opts: ImportOptions, source: Source | None = None) -> None:
        # ReplayFeed.__init__ wants a recording: the attributes the app reads are set here
        self.path, self.opts, self._source = path, opts, source
        self.speed, self.instant, self.now = 1.0, True, 0.0
        self.finished = False

    @property
    def servers(self) -> list[str]:
        """The import's one 'server': its file."""
        return [label_of(self.path)]

    def label(self) -> str:
        """The file and its size, for the status bar."""
        try:
            size = os.path.getsize(self.path) / 1e6
        except OSError:
            size = 0.0
        return f"import · {os.path.basename(self.path)} · {size:.1f} MB"

    async def fetch_opened(
        self, store: SessionStore, st: HelperState, sample: int, around: int | None
    ) -> list[Event]:
        """Nothing to fetch: an imported file has no server (give --tokenizer for token text)."""
        raise NotFetched("an imported file has no server; --tokenizer PATH gives token text")

    async def run(self, sink) -> None:
        """The import, into the app's fresh store."""
        self.finished = False
        source, self._source = self._source, None
        if source is None:
            source = open_source(self.path, self.opts.adapter)
        store = sink.feed_start_run()
        store.replay = True
        try:
            await pump(import_events(self.path, self.opts, source), store, None, sink.feed_event)
        except asyncio.CancelledError:
            sink.feed_end_run(store, counted=True, recording=None)
            raise
        sink.feed_end_run(store, counted=True, recording=None)
        self.finished = True
