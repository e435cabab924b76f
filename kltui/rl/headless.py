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


def with_server(opts: ImportOptions, server: str, api_key: str | None) -> None:
    """Re-score the worst shown samples on `server` after the file (opts.after)."""
    from kltui.rl.rescore import rescore_events

    def after(recs):
        return rescore_events(
            recs,
            server,
            api_key,
            threshold=opts.server_threshold,
            tail_threshold=opts.tail_threshold,
        )

    opts.after = after


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
    """The import as a folded store, and the process's exit code; with `server`, the worst
    shown samples re-scored on it (rescore.py), as more helpers of the same run."""
    if server:
        with_server(opts, server, api_key)
    store = SessionStore()
    recorder = Recorder(record) if record else None
    try:
        await pump(import_events(path, opts, source), store, recorder, view)
        code = import_exit(store)
        if any(p.fatal for p in store.problems):
            code = max(code, EXIT_SERVER)
    finally:
        if recorder is not None:
            recorder.close()
    return store, code
