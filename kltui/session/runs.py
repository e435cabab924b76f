"""Past runs: the recordings in the runs folder, newest first, and their retention; and the
sweep folders of `kltui ablate` in it, each with its configurations.

Listing reads only each file's head (header, RunStarted) and tail (RunFinished), so a folder of
large recordings lists in milliseconds; a sweep folder is read from its manifest alone
(`ablation.json`), never from its recordings. Only files that carry a kltui recording header are
ever listed as runs or pruned. Retention treats a sweep folder as one entry beside the
recordings (its age: the newest file in it), and touches only this user's entries: a shared
runs folder holds other users' runs too.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import orjson

from kltui.session.recording import (
    FORMAT,
    RUNS_DIR_ENV,
    RecordingError,
    current_user,
    default_runs_dir,
)

SUFFIX = ".kltui.jsonl"
# a `kltui ablate` sweep folder: its manifest, as run/sweep_manifest.py writes it (session/ is below run/)
SWEEP_MANIFEST = "ablation.json"
SWEEP_FORMAT = "kltui-ablation"
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
    # whose run: the header's user, host and cwd ("" where a recording from before kltui wrote
    # them says nothing; its file's owner then stands for the user)
    user: str = ""
    host: str = ""
    cwd: str = ""

    def mine(self, user: str | None = None) -> bool:
        """Recorded by `user` (default: this process's user)."""
        return self.user == (user or current_user())


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
        return RunFile(path, st.st_mtime, st.st_mtime, st.st_size, (), "?", False, _owner(st))
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
    user, host, cwd = (header.get(k) for k in ("user", "host", "cwd"))
    return RunFile(
        path,
        created,
        st.st_mtime,
        st.st_size,
        servers,
        verdict,
        True,
        user if isinstance(user, str) and user else _owner(st),
        host if isinstance(host, str) else "",
        cwd if isinstance(cwd, str) else "",
    )


def _folder_owner(path: Path) -> str:
    try:
        return _owner(path.stat())
    except OSError:
        return "?"


def _owner(st: os.stat_result) -> str:
    """The name of a file's owner (its uid where the password database has none)."""
    try:
        import pwd

        return pwd.getpwuid(st.st_uid).pw_name
    except (ImportError, KeyError):
        return str(st.st_uid)


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
    """This user's newest valid recording in the runs folder (a shared folder holds other
    users' runs too: those are never "the newest")."""
    folder = folder or default_runs_dir()
    runs = [r for r in list_runs(folder) if r.valid]
    me = current_user()
    for run in runs:
        if run.mine(me):
            return run.path
    whose = f" of {me}" if runs else ""
    others = f"; {len(runs)} of other users (kltui runs lists them)" if runs else ""
    raise RecordingError(
        f"no recordings{whose} in {folder}{others} (${RUNS_DIR_ENV} moves it); run kltui "
        "first or give FILE"
    )


@dataclass(frozen=True)
class SweepFolder:
    """A `kltui ablate` sweep folder in the runs folder: when, how big, its configurations."""

    path: Path
    created: float  # the manifest's `created`, else the folder's mtime
    modified: float  # the newest write to it or to any file in it
    size: int  # every file in it
    mode: str  # launch | attach
    configs: tuple[tuple[str, str, str | None], ...]  # (name, status, error kind)
    # the verdict's kind once it ended; else interrupted, or unfinished (running or killed)
    verdict: str


def _text(x: object, default: str = "?") -> str:
    return x if isinstance(x, str) else default


def inspect_sweep(path: Path) -> SweepFolder | None:
    """A sweep folder as its manifest says (None: not a sweep folder, or its manifest cannot
    be read)."""
    try:
        doc = orjson.loads((path / SWEEP_MANIFEST).read_bytes())
        st = path.stat()
        stats = [p.stat() for p in path.iterdir() if p.is_file()]
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != SWEEP_FORMAT:
        return None
    configs = tuple(
        (_text(c.get("name")), _text(c.get("status")), c.get("error_kind") or None)
        for c in doc.get("configs") or ()
        if isinstance(c, dict)
    )
    timing = doc["timing"] if isinstance(doc.get("timing"), dict) else {}
    said = doc["verdict"] if isinstance(doc.get("verdict"), dict) else {}
    verdict = "interrupted" if doc.get("interrupted") else _text(said.get("kind"), "")
    if not verdict:
        verdict = "unfinished" if timing.get("total_s") is None else "done"
    created = doc.get("created")
    return SweepFolder(
        path,
        float(created) if isinstance(created, int | float) else st.st_mtime,
        max([st.st_mtime, *(f.st_mtime for f in stats)]),  # a running sweep writes its files
        sum(f.st_size for f in stats),
        _text(doc.get("mode")),
        configs,
        verdict,
    )


def list_sweeps(folder: Path | None = None) -> list[SweepFolder]:
    """The sweep folders in `folder` (default: the runs folder), newest first."""
    folder = folder or default_runs_dir()
    try:
        dirs = [p for p in folder.iterdir() if p.is_dir() and (p / SWEEP_MANIFEST).is_file()]
    except FileNotFoundError:
        return []
    except OSError as e:
        raise RecordingError(f"{folder}: cannot list sweep folders ({e.strerror})") from None
    sweeps = [s for p in dirs if (s := inspect_sweep(p)) is not None]
    return sorted(sweeps, key=lambda s: (s.created, s.path.name), reverse=True)


def newest_entry(folder: Path | None = None) -> Path:
    """The newest valid recording or sweep folder in the runs folder (what `kltui replay`
    opens without a FILE)."""
    folder = folder or default_runs_dir()
    me = current_user()
    runs = [r for r in list_runs(folder) if r.valid and r.mine(me)]
    sweeps = [s for s in list_sweeps(folder) if _folder_owner(s.path) == me]
    if sweeps and (not runs or sweeps[0].created >= runs[0].created):
        return sweeps[0].path
    return newest(folder)


# an unfinished entry written to this recently may be a run still going: never pruned
LIVE_S = 600.0


class EntryKind(StrEnum):
    """What an entry of the runs folder is."""

    RECORDING = "recording"
    SWEEP = "sweep"  # a `kltui ablate` folder


@dataclass(frozen=True)
class Entry:
    """What retention weighs: a recording or a sweep folder."""

    path: Path
    created: float
    modified: float
    size: int
    verdict: str
    kind: EntryKind


def entries(folder: Path | None = None, user: str | None = None) -> tuple[list[Entry], int]:
    """`user`'s (default: this process's) recordings and sweep folders, newest first, and how
    many other users' entries the folder holds (never pruned)."""
    me = user or current_user()
    out: list[Entry] = []
    others = 0
    for r in list_runs(folder):
        if not r.valid:
            continue
        if not r.mine(me):
            others += 1
            continue
        out.append(Entry(r.path, r.created, r.modified, r.size, r.verdict, EntryKind.RECORDING))
    for sw in list_sweeps(folder):
        if _folder_owner(sw.path) != me:
            others += 1
            continue
        out.append(Entry(sw.path, sw.created, sw.modified, sw.size, sw.verdict, EntryKind.SWEEP))
    out.sort(key=lambda e: (e.created, e.path.name), reverse=True)
    return out, others


def to_prune(
    items: list[Entry], *, keep: int | None, older_than_days: float | None, now: float
) -> list[Entry]:
    """Entries beyond the newest `keep`, or not written to for `older_than_days`; never one
    that is unfinished and was written to in the last LIVE_S seconds (a run still going)."""
    out = []
    for i, e in enumerate(items):
        beyond = keep is not None and i >= keep
        old = older_than_days is not None and now - e.modified > older_than_days * 86400
        live = e.verdict == "unfinished" and now - e.modified < LIVE_S
        if (beyond or old) and not live:
            out.append(e)
    return out


def prune(
    folder: Path | None = None,
    *,
    keep: int | None,
    older_than_days: float | None,
    dry_run: bool = False,
) -> tuple[list[Entry], list[str], int]:
    """Remove what `to_prune` picks of this user's entries; returns (removed, errors, how many
    entries of other users were left alone)."""
    items, others = entries(folder)
    victims = to_prune(items, keep=keep, older_than_days=older_than_days, now=time.time())
    removed, errors = [], []
    for e in victims:
        if dry_run:
            removed.append(e)
            continue
        try:
            if e.kind == EntryKind.SWEEP:
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed.append(e)
        except FileNotFoundError:
            continue
        except OSError as err:
            errors.append(f"{err.filename or e.path}: not removed ({err.strerror})")
    return removed, errors, others


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


def whose(r: RunFile) -> str:
    """ "user@host:cwd" of a run, with what its header leaves out as "?"."""
    home = os.path.expanduser("~")
    cwd = r.cwd
    if cwd and r.mine() and (cwd == home or cwd.startswith(home + os.sep)):
        cwd = "~" + cwd[len(home) :]
    return f"{r.user or '?'}@{r.host or '?'}:{cwd or '?'}"


def table(runs: list[RunFile], clean=str) -> list[str]:
    """Aligned text rows; `clean` makes the untrusted strings (server URLs, the header's user,
    host and folder) safe to print."""
    rows = [("date", "by (user@host:folder)", "servers", "verdict", "size", "path")]
    for r in runs:
        date = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created))
        servers = clean(", ".join(r.servers)) or "-"
        verdict = r.verdict if r.valid else "not a recording"
        by = clean(whose(r))
        rows.append((date, by, servers, clean(verdict), human_size(r.size), clean(r.path)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return [
        "  ".join([row[i].ljust(widths[i]) for i in range(4)] + [row[4].rjust(widths[4]), row[5]])
        for row in rows
    ]
