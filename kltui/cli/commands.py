"""Command line: dispatch of a parsed `kltui` command line (the parser: `parser.py`; what each
subcommand does: `handlers.py`; their options and the RunConfig built from them: `options.py`).
Heavy modules are imported only when needed so `kltui --help` stays fast (no torch, no textual
at import)."""

from __future__ import annotations

import os
import sys

from kltui.argtypes import KltuiParser
from kltui.cli.options import SUBCOMMANDS
from kltui.cli.parser import make_parser
from kltui.errors import EXIT_INTERRUPTED, EXIT_SERVER, EXIT_USAGE, UsageError

__all__ = ["main", "make_parser"]


def main(argv: list[str] | None = None) -> int:
    """Run one `kltui` command line and return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv = ["tui", *argv]
    if argv and argv[0] == "web":
        return _web(argv[1:])
    parser = make_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the subcommand they were given to, not bare `kltui`
        words = [getattr(args, "command", None), getattr(args, "dumps_command", None)]
        prog = " ".join(["kltui", *(w for w in words if w)])
        KltuiParser(prog=prog).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except UsageError as e:
        print(f"kltui: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except OSError as e:
        print(f"kltui: error: {e}", file=sys.stderr)
        if os.environ.get("KLTUI_DEBUG") is not None:
            raise
        return EXIT_SERVER


def _web(argv: list[str]) -> int:
    from kltui.cli.web import main as web_main
    from kltui.errors import UsageError

    try:
        return web_main(argv)
    except UsageError as e:
        print(f"kltui: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        print(f"kltui web: error: {e}", file=sys.stderr)
        return EXIT_SERVER


if __name__ == "__main__":
    sys.exit(main())
