"""The `kltui` argument parser: every subcommand, its options and the function that runs it
(`handlers.py`). `kltui --help` builds it, so nothing heavy at import."""

from __future__ import annotations

import argparse

from kltui import __version__
from kltui.argtypes import KltuiParser, number, pos_int
from kltui.cli.handlers import (
    cmd_check,
    cmd_demo,
    cmd_replay,
    cmd_report,
    cmd_runs,
    cmd_serve_reference,
    cmd_tui,
)
from kltui.cli.options import (
    DEMO_PROMPT_TOKENS,
    DEMO_SIZES,
    DESCRIPTION,
    EXIT_CODES,
    add_read_only,
    add_run_options,
    add_settings,
    days_arg,
)
from kltui.reference.faults import FAULTS, fault_arg


def add_dashboard_options(parser: argparse.ArgumentParser, *, flush: bool = True) -> None:
    """Add the options of a command that opens the dashboard: --theme, --yes-flush (`flush`:
    where it runs helpers), --read-only and --screenshot-dir."""
    add_settings(parser, ("theme", "yes_flush") if flush else ("theme",))
    add_read_only(parser)
    parser.add_argument(
        "--screenshot-dir",
        metavar="DIR",
        help="where s saves its SVG screenshots (default: the runs folder; see `kltui runs`)",
    )


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of `kltui` and every subcommand."""
    p = KltuiParser(
        prog="kltui",
        description=DESCRIPTION,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"kltui {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    _add_tui(sub)
    _add_check(sub)

    from kltui.cli.ablate import add_parser as add_ablate_parser
    from kltui.cli.import_cmd import add_parser as add_import_parser
    from kltui.cli.monitor import add_parser as add_monitor_parser

    add_ablate_parser(sub)
    add_import_parser(sub)
    add_monitor_parser(sub)
    _add_demo(sub)
    _add_report(sub)
    _add_replay(sub)
    _add_runs(sub)
    _add_web(sub)

    from kltui.dumps.cli import add_parsers as add_dumps_parsers
    from kltui.dumps.probe_ops import add_parser as add_probe_parser

    add_dumps_parsers(sub, _dumps_verdict)
    add_probe_parser(sub)
    _add_serve_reference(sub)
    return p


# the subparsers' container (argparse names it privately)
Subparsers = argparse._SubParsersAction


def _dumps_verdict(v) -> str:
    """`kltui dumps`' verdict in words (imported once an analysis has one: it loads numpy)."""
    from kltui.words.dumps import verdict_words

    return verdict_words(v)


def _add_tui(sub: Subparsers) -> None:
    tui = sub.add_parser("tui", help="live dashboard (default command)")
    add_run_options(tui)
    tui.add_argument("--watch", action="store_true", help="re-run when the server restarts")
    add_settings(tui, ("dump_dir",))
    tui.add_argument(
        "--dumps",
        metavar="FILE.json",
        help="open a saved `kltui dumps --json` result (its module table); no --server needed",
    )
    add_dashboard_options(tui)
    tui.set_defaults(func=cmd_tui)


def _add_check(sub: Subparsers) -> None:
    from kltui.cli.report import add_report_options

    check = sub.add_parser("check", help="headless gate for CI", epilog=EXIT_CODES)
    add_run_options(check)
    add_settings(check, ("explain",))
    add_report_options(check)
    check.add_argument(
        "--repeat",
        type=pos_int,
        default=1,
        metavar="N",
        help="run N times; each re-run is compared bit for bit with the one before",
    )
    check.set_defaults(func=cmd_check)


def _add_demo(sub: Subparsers) -> None:
    from kltui.cli.report import add_report_options

    demo = sub.add_parser(
        "demo",
        help="start the embedded reference server and run on it",
        description="Start the embedded SGLang-compatible reference server (a tiny Llama in "
        "torch on CPU, on a free 127.0.0.1 port) and open the dashboard on it. Sized for a "
        "laptop CPU: {samples} built-in prompts of {lo}-{hi} tokens (--max-prompt-tokens "
        "{max_prompt_tokens} cuts none of them), {max_new_tokens} new tokens each (the "
        "defaults below).".format(**DEMO_SIZES, lo=DEMO_PROMPT_TOKENS[0], hi=DEMO_PROMPT_TOKENS[1]),
    )
    add_run_options(demo, servers=False, sizes=DEMO_SIZES)
    demo.add_argument("--headless", action="store_true", help="print results instead of the TUI")
    demo.add_argument(
        "--deterministic", action="store_true", help="batch-invariant kernels: k3 must be exactly 0"
    )
    demo.add_argument(
        "--fault",
        type=fault_arg,
        default="none",
        metavar="FAULT",
        help=f"plant a state bug ({', '.join(FAULTS)}; the load-triggered ones show only "
        "with --stress or --batch-sizes: docs/DIAGNOSIS.md)",
    )
    demo.add_argument(
        "--page-size",
        type=pos_int,
        default=1,
        help="the reference server's radix cache page size in tokens (1); a prefix hit is "
        "rounded down to whole pages, as in SGLang",
    )
    add_dashboard_options(demo)
    add_report_options(demo)
    demo.set_defaults(func=cmd_demo)


def _add_report(sub: Subparsers) -> None:
    from kltui.cli.report import add_arguments as add_report_arguments

    report = sub.add_parser("report", help="HTML, Markdown, JSON or JUnit reports from a recording")
    add_report_arguments(report)
    report.set_defaults(func=cmd_report)


def _add_replay(sub: Subparsers) -> None:
    replay = sub.add_parser("replay", help="open a recording in the TUI, as it ran")
    replay.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="a .kltui.jsonl recording or a `kltui ablate` sweep folder (default: the newest "
        "in the runs folder; see `kltui runs`)",
    )
    pace = replay.add_mutually_exclusive_group()
    pace.add_argument(
        "--speed",
        type=number,
        help="replay at X times the recorded pace (--speed 1: real time, as slowly as the run "
        "went; --speed 10 is ten times faster); without it the recording opens at once",
    )
    pace.add_argument(
        "--instant", action="store_true", help="open everything at once (the default)"
    )
    add_dashboard_options(replay, flush=False)
    replay.add_argument(
        "--headless",
        action="store_true",
        help="print the results instead; exit as `kltui check` did for the recorded verdicts",
    )
    replay.set_defaults(func=cmd_replay)


def _add_runs(sub: Subparsers) -> None:
    runs = sub.add_parser(
        "runs",
        help="list past runs (recordings), newest first; --prune removes old ones",
        description="Recordings in $KLTUI_RUNS_DIR or ~/.local/state/kltui/runs, newest first: "
        "date, servers, verdict, size, path; then the sweep folders of kltui ablate. "
        "Retention: `--prune --keep N` and/or `--older-than DAYS`, or set KLTUI_RUNS_KEEP=N to "
        "prune at every recorded run; it weighs a sweep folder as one entry and removes only "
        "your own entries, never an unfinished one written to in the last 10 minutes.",
    )
    runs.add_argument(
        "--prune", action="store_true", help="remove old recordings and sweep folders (see below)"
    )
    runs.add_argument(
        "--keep",
        type=pos_int,
        metavar="N",
        help="with --prune: keep your newest N (recordings and sweep folders)",
    )
    runs.add_argument(
        "--older-than",
        type=days_arg,
        metavar="DAYS",
        help="with --prune: remove those not written to for DAYS days (e.g. 30 or 30d)",
    )
    runs.add_argument(
        "--dry-run", action="store_true", help="with --prune: list what would go, remove nothing"
    )
    runs.set_defaults(func=cmd_runs)


def _add_web(sub: Subparsers) -> None:
    web = sub.add_parser(
        "web",
        help="serve the dashboard in a browser (textual-serve): kltui web [--host H] "
        "[--port P] [--read-only] [tui|demo|replay options]; `kltui web --help` for more",
        add_help=False,
    )
    web.add_argument("web_args", nargs=argparse.REMAINDER, help="see `kltui web --help`")


def _add_serve_reference(sub: Subparsers) -> None:
    serve = sub.add_parser("serve-reference", help="run the embedded SGLang-compatible server")
    try:
        from kltui.reference.cli_entry import add_arguments
    except ImportError:
        pass  # without the `reference` extra: no options of its own
    else:
        add_arguments(serve)
    serve.set_defaults(func=cmd_serve_reference)
