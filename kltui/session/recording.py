"""Append-only JSONL recordings: a header line, then one event per line, flushed per event.

A run cut short (Ctrl-C, kill, a dead server) leaves a file that replays up to the last
complete line. See docs/RECORDING.md for the format.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from kltui import __version__
from kltui.errors import UsageError
from kltui.session.codec import decode, encode
from kltui.session.events import Event

FORMAT = "kltui-recording"
# 2: ExtrasFetched events, `at` times, f4/i2 array codes (a version-1 reader refuses these)
# 3: StressTick (--stress) and BatchProbed (--batch-sizes) events
# 4: FloorScored events (cross_engine's floors)
VERSION = 4
RUNS_DIR_ENV = "KLTUI_RUNS_DIR"


class RecordingError(UsageError):
    """A recording that cannot be read, named with its path."""

    pass


def current_user() -> str:
    """This process's user name (the password database's, else $USER), "?" if neither."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return os.environ.get("USER") or os.environ.get("USERNAME") or "?"


def origin() -> dict[str, str]:
    """Who recorded, on which machine, from which folder: the header's user, host and cwd."""
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "?"
    return {"user": current_user(), "host": socket.gethostname(), "cwd": cwd}


def default_runs_dir() -> Path:
    """The folder recordings go to by default ($KLTUI_RUNS_DIR, else the XDG state folder)."""
    env = os.environ.get(RUNS_DIR_ENV)
    if env:
        return Path(env)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "kltui" / "runs"


def default_recording_path(now: float | None = None) -> Path:
    """A fresh recording path in the default runs folder."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    return default_runs_dir() / f"run-{stamp}-{os.getpid()}.kltui.jsonl"


class Recorder:
    """Writes events as they happen; never rewrites what is already on disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(self.path, "ab")  # noqa: SIM115 - lives as long as the run
        except OSError as e:
            raise RecordingError(f"{self.path}: cannot open for recording ({e.strerror})") from None
        if self._f.tell() == 0:
            header = {
                "format": FORMAT,
                "version": VERSION,
                "kltui_version": __version__,
                "created": time.time(),
                # whose run it is: a runs folder may be shared ($KLTUI_RUNS_DIR), and `kltui
                # runs` and "the newest recording" tell one user's runs from another's
                **origin(),
            }
            self._write(header)
        self.t0 = time.monotonic()

    def _write(self, obj: dict) -> None:
        self._f.write(orjson.dumps(obj) + b"\n")
        self._f.flush()

    def write(self, event: Event) -> None:
        """Append one event to the recording."""
        rec = encode(event)
        rec["t"] = round(time.monotonic() - self.t0, 6)
        self._write(rec)

    def close(self) -> None:
        """Close the recording file."""
        if not self._f.closed:
            self._f.close()


@dataclass
class Recording:
    """A recording read back: its header, events, their times, and whether it was cut short."""

    path: str
    header: dict
    events: list[Event]
    times: list[float]
    truncated: bool  # the last line was cut short (the run was killed mid-write)


def read_recording(path_str: str) -> Recording:
    """The recording at a path, read and decoded."""
    path = Path(path_str)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RecordingError(f"{path_str}: recording not found") from None
    except OSError as e:
        raise RecordingError(f"{path_str}: cannot read ({e.strerror})") from None
    lines = raw.split(b"\n")
    truncated = bool(lines and lines[-1].strip())  # no trailing newline: last write was cut
    if truncated:
        lines = lines[:-1]
    if not lines or not lines[0].strip():
        raise RecordingError(f"{path_str}: empty file, not a kltui recording")
    try:
        header = orjson.loads(lines[0])
    except orjson.JSONDecodeError:
        raise RecordingError(f"{path_str}:1: not a kltui recording (header is not JSON)") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(f"{path_str}:1: not a kltui recording (no '{FORMAT}' header)")
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise RecordingError(
            f"{path_str}:1: recording format version {version!r} is newer than this kltui "
            f"understands ({VERSION}); upgrade kltui (this is {__version__})"
        )
    events, times = [], []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
            events.append(decode(obj))
            times.append(float(obj.get("t", 0.0)))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, OverflowError) as e:
            if n == len(lines):  # a torn final line is expected after a kill
                truncated = True
                break
            raise RecordingError(f"{path_str}:{n}: malformed event ({e})") from None
    return Recording(path_str, header, events, times, truncated)
