"""What a run's command line is refused for before anything runs: gates no verdict could pass,
output paths that cannot be written, one server named twice, a log that cannot be read."""

from __future__ import annotations

import argparse
import math

from kltui.cli.report import REPORT_FORMATS
from kltui.errors import UsageError

OUTPUT_OPTIONS = ("json", *REPORT_FORMATS, "record")


def check_numbers(args: argparse.Namespace) -> None:
    """Gates that would make every verdict meaningless (NaN never compares, a gate below 0 can
    never pass) are refused before anything runs. --threshold 0 asks for bit-exactness
    (`within_threshold`); a tail threshold of 0 would count every token as tail."""
    for flag, least in (("threshold", 0.0), ("tail_threshold", None)):
        v = getattr(args, flag, None)
        if v is None or (math.isfinite(v) and (v > 0 or v == least)):
            continue
        name = "--" + flag.replace("_", "-")
        if least is None:
            raise UsageError(f"{name} {v!r}: must be a positive finite number")
        raise UsageError(f"{name} {v!r}: must be a finite number >= 0 (0: bit-exact)")


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path's folder must exist and take a new file now, not after the run."""
    from pathlib import Path

    for name in OUTPUT_OPTIONS:
        path = getattr(args, name, None)
        if not isinstance(path, str) or path == "-":
            continue
        if why := _unwritable(Path(path)):
            raise UsageError(f"--{name} {path}: {why}")


def _unwritable(target) -> str | None:
    """Why a new file cannot be written at `target` now, or None."""
    import tempfile

    folder = target.resolve().parent
    if target.is_dir():
        return "is a directory"
    if not folder.is_dir():
        return f"no such directory {str(folder)!r}"
    try:  # os.access says yes to root on a read-only mount: try a real file
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".kltui-probe-"):
            pass
    except OSError as e:
        return f"cannot write in {str(folder)!r} ({e.strerror or e})"
    return None


def check_duplicate_servers(servers: list[str], where: str) -> None:
    """Two names for one server (localhost:P and 127.0.0.1:P, or one URL twice) would run
    twice, the second overwriting the first: refused."""
    import socket
    from urllib.parse import urlsplit

    seen: dict[tuple, str] = {}
    for url in servers:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = (parts.hostname or "").lower()
        keys = {(host, port)}
        if len(servers) > 1:
            try:
                infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
                keys |= {(str(info[4][0]), port) for info in infos}
            except (OSError, UnicodeError):
                pass  # unresolvable here: compared by name; connecting will say more
        for key in keys:
            if key in seen and seen[key] != url:
                raise UsageError(
                    f"{where}: {seen[key]} and {url} are the same server ({key[0]} port "
                    f"{key[1]}); name each server once"
                )
            if key in seen:
                raise UsageError(f"{where}: {url} is named twice; name each server once")
        for key in keys:
            seen[key] = url


def check_readable(path: str, where: str) -> None:
    """A log the user named is read, or refused now: unread, its settings would say 'unknown'."""
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise UsageError(f"{where}: cannot read {path!r} ({e.strerror or e})") from None
