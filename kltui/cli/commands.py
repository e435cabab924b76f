"""Command line: dispatch of a parsed `kltui` command line (the parser: `parser.py`; what each
subcommand does: `handlers.py`; their options and the RunConfig built from them: `options.py`).
Heavy modules are imported only when needed so `kltui --help` stays fast (no torch, no textual
at import)."""

from __future__ import annotations

import difflib
import os
import re
import sys

from kltui.argtypes import KltuiParser
from kltui.cli.options import SUBCOMMANDS
from kltui.cli.parser import make_parser
from kltui.errors import EXIT_SERVER, UsageError, exception_exit

__all__ = ["main", "make_parser"]


def main(argv: list[str] | None = None) -> int:
    """Runs one `kltui` command line; returns its exit code (errors.py says what each means)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and _is_import_file(argv[0]):  # `kltui FILE`: the import in the dashboard
        argv = ["import", argv[0], "--tui", *argv[1:]]
    known = (*SUBCOMMANDS, "import", "-h", "--help", "--version")
    if argv and argv[0] not in known:
        _refuse_unknown_command(argv[0])
        argv = ["tui", *argv]
    if argv and argv[0] == "web":
        return _web(argv[1:])
    if argv and argv[0] == "ablate":
        from kltui.cli.ablate import join_raw_varies

        argv = join_raw_varies(argv)  # --vary "--raw-flag=1,8": a value that looks like an option
    parser = make_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the subcommand they were given to, not bare `kltui`
        words = [getattr(args, "command", None), getattr(args, "dumps_command", None)]
        prog = " ".join(["kltui", *(w for w in words if w)])
        KltuiParser(prog=prog).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return _guarded(args.func, args, "kltui")


def _is_import_file(arg: str) -> bool:
    """A file `kltui import` reads (not a recording, which `kltui replay` opens)."""
    if arg.startswith("-") or arg in SUBCOMMANDS or arg.endswith(".kltui.jsonl"):
        return False
    return arg.lower().endswith((".jsonl", ".parquet", ".pq", ".pt")) and os.path.isfile(arg)


def _refuse_unknown_command(word: str) -> None:
    """A first word that names no command (`kltui chek`) is a typo, not the dashboard's
    argument: say so, with the nearest command, rather than "tui: unrecognized arguments"."""
    if word.startswith("-") or not re.fullmatch(r"[A-Za-z][A-Za-z_-]*", word):
        return  # an option of the dashboard, or a path (the dashboard names it)
    commands = sorted((*SUBCOMMANDS, "import"))
    near = difflib.get_close_matches(word, commands, n=1)
    hint = f"did you mean {near[0]}?" if near else f"the commands: {', '.join(commands)}"
    KltuiParser(prog="kltui").error(f"unknown command {word!r} ({hint})")


def _web(argv: list[str]) -> int:
    from kltui.cli.web import main as web_main

    return _guarded(web_main, argv, "kltui web")


def _guarded(func, arg, prog: str) -> int:
    """Runs a command; an exception with a documented exit code (errors.exception_exit) becomes
    that code and one line on stderr (none for Ctrl-C), anything else is a bug and surfaces."""
    try:
        return func(arg)
    except (KeyboardInterrupt, UsageError, OSError) as e:
        code = exception_exit(e)
        if isinstance(e, UsageError):
            print(f"kltui: error: {e}", file=sys.stderr)
        elif isinstance(e, OSError):
            print(f"{prog}: error: {e}", file=sys.stderr)
        if isinstance(e, OSError) and os.environ.get("KLTUI_DEBUG") is not None:
            raise
        return EXIT_SERVER if code is None else code


if __name__ == "__main__":
    sys.exit(main())
