"""Past runs: the recordings in the runs folder, newest first, and their retention.

Listing reads only each file's head (header, RunStarted) and tail (RunFinished), so a folder of
large recordings lists in milliseconds. Only files that carry a kltui recording header are ever
listed as runs or pruned.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from kltui.session.recording import FORMAT, RUNS_DIR_ENV, RecordingError, default_runs_dir

SUFFIX = ".kltui.jsonl"
KEEP_ENV = "KLTUI_RUNS_KEEP"  # retention: keep only the newest N recordings of the runs folder
HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 20


@dataclass(frozen=True)
class RunFile:
    """One recording in the runs folder: when, how big, which servers, what verdict."""

    path: Path
    created: float  # the header's `created`, else the file's mtime
    modified: float
    size: int
    servers: tuple[str, ...]
    verdict: str  # pass | fail | error | interrupted | unfinished (cut short or still running)
    valid: bool  # carries a kltui recording header


def _lines(chunk: bytes) -> list[bytes]:
    return [ln for ln in chunk.split(b"\n") if ln.strip()]


def _loads(line: bytes) -> dict | None:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def inspect(path: Path) -> RunFile:
    """What a recording's first and last lines say about it, without reading it all."""
    st = path.stat()
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
        tail = head
        if st.st_size > HEAD_BYTES:
            f.seek(max(0, st.st_size - TAIL_BYTES))
            tail = f.read().split(b"\n", 1)[-1]  # the first line of the window may be partial
    lines = _lines(head)
    header = _loads(lines[0]) if lines else None
    if not header or header.get("format") != FORMAT:
        return RunFile(path, st.st_mtime, st.st_mtime, st.st_size, (), "?", False)
    created = header.get("created")
    created = float(created) if isinstance(created, int | float) else st.st_mtime
    servers: tuple[str, ...] = ()
    for line in lines[1:]:
        if b'"RunStarted"' in line and (obj := _loads(line)) and obj.get("type") == "RunStarted":
            urls = [s.get("url") for s in obj.get("servers") or [] if isinstance(s, dict)]
            servers = tuple(str(u) for u in urls if u)
            break
    verdict = "unfinished"
    for line in reversed(_lines(tail)):
        if b'"RunFinished"' in line and (obj := _loads(line)) and obj.get("type") == "RunFinished":
            verdict = str(obj.get("verdict", "?"))
            break
    return RunFile(path, created, st.st_mtime, st.st_size, servers, verdict, True)


def list_runs(folder: Path | None = None) -> list[RunFile]:
    """Recordings in `folder` (default: the runs folder), newest first."""
    folder = folder or default_runs_dir()
    try:
        paths = [p for p in folder.iterdir() if p.name.endswith(SUFFIX) and p.is_file()]
    except FileNotFoundError:
        return []
    except OSError as e:
        raise RecordingError(f"{folder}: cannot list recordings ({e.strerror})") from None
    runs = []
    for p in paths:
        try:
            runs.append(inspect(p))
        except OSError:
            continue  # removed or unreadable while listing: not a run we can show
    # files that are not recordings go last: they are listed so that nothing there is unseen
    return sorted(runs, key=lambda r: (r.valid, r.created, r.path.name), reverse=True)


def newest(folder: Path | None = None) -> Path:
    """The newest valid recording in the runs folder."""
    folder = folder or default_runs_dir()
    for run in list_runs(folder):
        if run.valid:
            return run.path
    raise RecordingError(
        f"no recordings in {folder} (${RUNS_DIR_ENV} moves it); run kltui first or give FILE"
    )


def to_prune(
    runs: list[RunFile], *, keep: int | None, older_than_days: float | None, now: float
) -> list[RunFile]:
    """Recordings beyond the newest `keep`, or not written to for `older_than_days`. A file
    still being written has a fresh mtime and is among the newest, so it is never chosen."""
    valid = [r for r in runs if r.valid]
    out = []
    for i, r in enumerate(valid):
        beyond = keep is not None and i >= keep
        old = older_than_days is not None and now - r.modified > older_than_days * 86400
        if beyond or old:
            out.append(r)
    return out


def prune(
    folder: Path | None = None,
    *,
    keep: int | None,
    older_than_days: float | None,
    dry_run: bool = False,
) -> tuple[list[RunFile], list[str]]:
    """Remove what `to_prune` picks; returns (removed, errors)."""
    victims = to_prune(
        list_runs(folder), keep=keep, older_than_days=older_than_days, now=time.time()
    )
    removed, errors = [], []
    for r in victims:
        if dry_run:
            removed.append(r)
            continue
        try:
            os.unlink(r.path)
            removed.append(r)
        except FileNotFoundError:
            continue
        except OSError as e:
            errors.append(f"{r.path}: not removed ({e.strerror})")
    return removed, errors


def keep_setting() -> int | None:
    """`KLTUI_RUNS_KEEP`: a positive integer, else None (keep everything)."""
    raw = os.environ.get(KEEP_ENV, "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise RecordingError(f"{KEEP_ENV}={raw!r}: must be a positive integer (recordings kept)")
    return n


def human_size(n: int) -> str:
    """A byte count as B, KB, MB or GB."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def table(runs: list[RunFile], clean=str) -> list[str]:
    """Aligned text rows; `clean` makes the untrusted server URLs safe to print."""
    rows = [("date", "servers", "verdict", "size", "path")]
    for r in runs:
        date = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created))
        servers = clean(", ".join(r.servers)) or "-"
        verdict = r.verdict if r.valid else "not a recording"
        rows.append((date, servers, clean(verdict), human_size(r.size), clean(r.path)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return [
        "  ".join(
            [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].ljust(widths[2])]
            + [row[3].rjust(widths[3]), row[4]]
        )
        for row in rows
    ]
