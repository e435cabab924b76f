"""`kltui import` without the dashboard: the import's events pumped into a store (and a
recording, and a console view) exactly as a live run's are, then the exit code."""

from __future__ import annotations

from collections.abc import Callable

from kltui.errors import EXIT_SERVER, EXIT_USAGE, exit_code
from kltui.importer.reader import Source
from kltui.rl.stream import ImportOptions, import_events
from kltui.session.consume import pump
from kltui.session.events import Event
from kltui.session.recording import Recorder
from kltui.session.store import SessionStore


def import_exit(store: SessionStore) -> int:
    """2 when records could not be used (bad input, errors.py), else the verdict's code."""
    for st in store.helpers.values():
        rl = st.summary.raw.get("rl") if st.summary is not None else None
        if isinstance(rl, dict) and rl.get("bad_records"):
            return EXIT_USAGE
    return exit_code(store.finished.verdict if store.finished else None)


async def run_import(
    path: str,
    opts: ImportOptions,
    source: Source | None = None,
    *,
    record: str | None = None,
    server: str | None = None,
    api_key: str | None = None,
    view: Callable[[Event], None] | None = None,
) -> tuple[SessionStore, int]:
    """The import as a folded store, and the process's exit code; with `server`, the shown
    samples re-scored on it afterwards (rescore.py), as more events of the same run."""
    store = SessionStore()
    recorder = Recorder(record) if record else None
    try:
        await pump(import_events(path, opts, source), store, recorder, view)
        code = import_exit(store)
        if server:
            from kltui.rl.rescore import rescore_events

            await pump(rescore_events(store, server, api_key), store, recorder, view)
            if any(p.fatal for p in store.problems):
                code = max(code, EXIT_SERVER)
    finally:
        if recorder is not None:
            recorder.close()
    return store, code
