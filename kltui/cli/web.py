"""`kltui web`: the same dashboard in a browser, served by textual-serve (the `web` extra).

textual-serve starts one kltui process per browser tab (the command below, run with Textual's
web driver) and relays its screen over a websocket. So every tab is its own dashboard: a live
one starts its own run against the servers, a replay replays the same file.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import socket
import sys
from pathlib import Path

import kltui
from kltui.argtypes import KltuiParser
from kltui.errors import UsageError
from kltui.words.web import tab_runs

SERVED = ("tui", "demo", "replay")
DEFAULT_PORT = 8000

USAGE = """kltui web [--host H] [--port P] [--public-url URL] [--read-only] [--verbose]
                 [COMMAND ARGS...]

Serves the dashboard in a browser: COMMAND is what each browser tab runs, with the options it
takes in a terminal: `--server HOST:PORT ...` (the live dashboard, the default), `demo ...` or
`replay [FILE|FOLDER]` (a recording or a kltui ablate sweep folder; default: the newest).

  kltui web --server localhost:30000           http://127.0.0.1:8000, the live dashboard
  kltui web --read-only replay                 the newest recording, for reviewers
  kltui web --read-only replay ablate-FOLDER   a sweep's matrix, each configuration's dashboard
  kltui web --host 0.0.0.0 --read-only demo    reachable from other machines
"""


def parser() -> argparse.ArgumentParser:
    """The `kltui web` parser: its own options, the rest passed to each tab's command."""
    p = KltuiParser(prog="kltui web", usage=USAGE, allow_abbrev=False)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (127.0.0.1: this machine only; 0.0.0.0 exposes it)",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="the URL browsers use, when it is not http://HOST:PORT (a proxy, a wildcard host)",
    )
    p.add_argument(
        "--read-only",
        action="store_true",
        help="reviewers' mode: keys that act on servers or files (r re-run, s screenshot) are off",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="print the web server's access log (a few lines per HTTP request; off by default)",
    )
    return p


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def app_argv(rest: list[str], read_only: bool) -> list[str]:
    """The kltui command line each tab runs, checked now so a mistake fails here and not in
    every browser tab."""
    from kltui.cli.options import SUBCOMMANDS
    from kltui.cli.parser import make_parser

    argv = list(rest)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] not in SUBCOMMANDS:
        argv = ["tui", *argv]
    if argv[0] not in SERVED:
        raise UsageError(f"kltui web serves {', '.join(SERVED)}; not {argv[0]!r}")
    if read_only and "--read-only" not in argv:
        argv.append("--read-only")
    args = make_parser().parse_args(argv)  # a usage error exits 2 here, with argparse's line
    if getattr(args, "headless", False):
        raise UsageError("--headless has no dashboard to serve")
    if argv[0] == "tui":
        from kltui.cli.run_config import build_config

        if not build_config(args).servers:
            raise UsageError("give --server HOST:PORT, or serve `demo` or `replay`")
    if argv[0] == "replay":
        from kltui.session.recording import read_recording

        if args.file is None:
            from kltui.session.runs import newest_entry

            # every tab replays the same entry, the newest when the server started
            path = str(newest_entry())
            argv.insert(1, path)
        else:
            path = args.file
        if Path(path).is_dir():  # a kltui ablate sweep folder: its matrix in every tab
            from kltui.run.sweep_manifest import load

            load(path)  # a folder that is not a sweep fails now, in one line
        else:
            read_recording(path)  # a bad file fails now, in one line
    return argv


def warning(host: str, url: str, read_only: bool) -> str | None:
    """The warning to print when serving beyond this machine, or None."""
    if is_loopback(host):
        return None
    keys = (
        "read-only: r (re-run) and s (screenshot) are off, but every new tab still starts "
        "its own run of the served command"
        if read_only
        else "anyone who reaches it can press r (re-run: new requests to your servers) and "
        "s (write screenshots on this machine); --read-only turns those keys off"
    )
    return f"kltui web: WARNING: {url} is reachable from other machines, with no login; {keys}"


def checkout_root() -> Path | None:
    """The source checkout kltui runs from (an editable install or PYTHONPATH), else None."""
    root = Path(kltui.__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    try:
        ours = 'name = "kltui"' in pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if ours else None


def web_install_hint() -> str:
    """How to install the [web] extra: from a checkout, pip's editable form of that checkout
    (`pip install 'kltui[web]'` would fetch another kltui from the index)."""
    root = checkout_root()
    if root is None:
        return "pip install 'kltui[web]' (or textual-serve)"
    where = "." if Path.cwd().resolve() == root else str(root)
    return f"pip install -e '{where}[web]'"


def main(argv: list[str]) -> int:
    """Run `kltui web`: serve the dashboard in a browser."""
    opts, rest = parser().parse_known_args(argv)
    try:
        from kltui.cli.web_serve import StoppingServer
    except ImportError:
        raise UsageError(f"kltui web needs textual-serve: {web_install_hint()}") from None
    command = app_argv(rest, opts.read_only)
    if opts.public_url:
        url = opts.public_url.rstrip("/")
    elif opts.host in ("0.0.0.0", "::"):
        url = f"http://{socket.getfqdn()}:{opts.port}"
    else:
        host = f"[{opts.host}]" if ":" in opts.host else opts.host
        url = f"http://{host}:{opts.port}"
    # exec: the process textual-serve starts (and stops) is the dashboard, not a shell above it
    shell = "exec " + shlex.join([sys.executable, "-m", "kltui", *command])
    note = warning(opts.host, url, opts.read_only)
    print(tab_runs(command), file=sys.stderr)
    if note:
        print(note, file=sys.stderr)
    server = StoppingServer(
        shell,
        host=opts.host,
        port=opts.port,
        title="kltui",
        public_url=url,
        verbose=opts.verbose,
    )
    server.serve()
    return 0
