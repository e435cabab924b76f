"""Command line: the subcommands and their dispatch (their options and the RunConfig built
from them: `options.py`). Heavy modules are imported only when needed so `kltui --help` stays
fast (no torch, no textual at import)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from kltui import __version__
from kltui.cli.options import (
    DEMO_SIZES,
    DESCRIPTION,
    EXIT_CODES,
    SUBCOMMANDS,
    THEME_HELP,
    YES_FLUSH_HELP,
    _days,
    _float,
    _pos_int,
    add_read_only,
    add_run_options,
    build_config,
    check_numbers,
    check_outputs,
    record_path,
)
from kltui.errors import EXIT_INTERRUPTED, EXIT_SERVER, EXIT_USAGE, UsageError


def _headless(cfg, args: argparse.Namespace) -> int:
    from kltui.cli.report import report_writer
    from kltui.outputs.headless import run_check

    rec = record_path(args)
    reports = report_writer(args, recording=rec)  # checks output folders before the run
    return asyncio.run(
        run_check(
            cfg,
            json_path=args.json,
            record_path=rec,
            extra_outputs=reports,
            repeat=getattr(args, "repeat", None) or 1,
        )
    )


def cmd_check(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    if not cfg.servers:
        raise UsageError("check needs --server HOST:PORT (or servers: in --config)")
    return _headless(cfg, args)


def cmd_report(args: argparse.Namespace) -> int:
    from kltui.cli.report import cmd_report as report

    return report(args)


def demo_config(args: argparse.Namespace, url: str):
    args.server = [url]
    cfg = build_config(args)
    # The demo is sized for a laptop CPU; every default can be overridden on the command line.
    for key, value in DEMO_SIZES.items():
        if getattr(args, key) is None:
            setattr(cfg, key, value)
    return cfg


def cmd_demo(args: argparse.Namespace) -> int:
    from kltui.reference.launcher import ReferenceServer

    check_numbers(args)  # refused before the reference server starts
    check_outputs(args)
    with ReferenceServer(
        deterministic=args.deterministic, fault=args.fault, page_size=args.page_size
    ) as srv:
        print(f"kltui demo: reference server at {srv.url}", file=sys.stderr)
        cfg = demo_config(args, srv.url)
        if args.headless:
            return _headless(cfg, args)
        return _run_tui(cfg, args)


def _run_tui(cfg, args, dumps_result: dict | None = None) -> int:
    from kltui.tui.launch import run_app

    return run_app(
        cfg,
        record=record_path(args),
        json_path=getattr(args, "json", None),
        theme=getattr(args, "theme", None),
        watch=getattr(args, "watch", False),
        read_only=getattr(args, "read_only", False),
        dumps_result=dumps_result,
        screenshot_dir=getattr(args, "screenshot_dir", None),
    )


def cmd_tui(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    dumps_result = None
    if args.dumps:
        from kltui.dumps.run import load_result

        dumps_result = load_result(args.dumps)  # a bad file is exit 2 before anything opens
    if not cfg.servers and dumps_result is not None:
        from kltui.tui.launch import run_dumps_viewer

        return run_dumps_viewer(dumps_result, args.theme or cfg.theme)
    if not cfg.servers:
        raise UsageError("give --server HOST:PORT, or run `kltui demo` for the embedded server")
    return _run_tui(cfg, args, dumps_result)


def cmd_replay(args: argparse.Namespace) -> int:
    from kltui.session.recording import read_recording

    if args.file is None:
        from kltui.session.runs import newest

        args.file = str(newest())
        print(f"kltui replay: newest recording {args.file}", file=sys.stderr)
    rec = read_recording(args.file)  # a bad or newer file fails here in one line, before the UI
    if args.headless:
        from kltui.outputs.headless import HeadlessView, make_console
        from kltui.session.fold import fold

        console = make_console()
        views: list[HeadlessView] = []

        def on_run(store):  # each run of the file is printed as `kltui check` printed it
            if views:
                views[-1].finish()
            views.append(HeadlessView(store, console))
            return views[-1]

        fold(rec, on_run)
        views[-1].finish()
        return 0
    from kltui.tui.launch import run_replay

    return run_replay(
        args.file,
        speed=args.speed,
        instant=args.instant,
        theme=args.theme,
        read_only=args.read_only,
        screenshot_dir=args.screenshot_dir,
    )


def cmd_runs(args: argparse.Namespace) -> int:
    from kltui.session.recording import default_runs_dir
    from kltui.session.runs import human_size, list_runs, prune, table
    from kltui.untrusted import escape_controls

    folder = default_runs_dir()
    if args.prune:
        if args.keep is None and args.older_than is None:
            raise UsageError("--prune needs --keep N and/or --older-than DAYS")
        removed, errors = prune(
            folder, keep=args.keep, older_than_days=args.older_than, dry_run=args.dry_run
        )
        verb = "would remove" if args.dry_run else "removed"
        for r in removed:
            print(f"{verb} {escape_controls(r.path)} ({human_size(r.size)})")
        freed = human_size(sum(r.size for r in removed))
        print(f"{verb} {len(removed)} recording(s), {freed}", file=sys.stderr)
        for err in errors:
            print(f"kltui: error: {err}", file=sys.stderr)
        return 1 if errors else 0
    runs = list_runs(folder)
    if not runs:
        print(f"no recordings in {escape_controls(folder)}", file=sys.stderr)
        return 0
    for line in table(runs, clean=escape_controls):
        print(line)
    total = human_size(sum(r.size for r in runs))
    print(f"{len(runs)} recording(s), {total} in {escape_controls(folder)}", file=sys.stderr)
    return 0


def cmd_serve_reference(args: argparse.Namespace) -> int:
    from kltui.reference.cli_entry import main as serve_main

    return serve_main(args)


def add_screenshot_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--screenshot-dir",
        metavar="DIR",
        help="where s saves its SVG screenshots (default: the runs folder; see `kltui runs`)",
    )


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kltui",
        description=DESCRIPTION,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"kltui {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    tui = sub.add_parser("tui", help="live dashboard (default command)")
    add_run_options(tui)
    tui.add_argument("--theme", help=THEME_HELP)
    tui.add_argument("--watch", action="store_true", help="re-run when the server restarts")
    tui.add_argument(
        "--dump-dir",
        metavar="DIR",
        help="where the dumper drill-down (diagnosis, u) has the server write its dumps "
        "(default: dumps/ in the runs folder)",
    )
    tui.add_argument(
        "--dumps",
        metavar="FILE.json",
        help="open a saved `kltui dumps --json` result (its module table); no --server needed",
    )
    tui.add_argument("--yes-flush", action="store_true", help=YES_FLUSH_HELP)
    add_read_only(tui)
    add_screenshot_dir(tui)
    tui.set_defaults(func=cmd_tui)

    from kltui.cli.report import add_arguments as add_report_arguments
    from kltui.cli.report import add_report_options

    check = sub.add_parser("check", help="headless gate for CI", epilog=EXIT_CODES)
    add_run_options(check)
    add_report_options(check)
    check.add_argument(
        "--repeat",
        type=_pos_int,
        default=1,
        metavar="N",
        help="run N times; each re-run is compared bit for bit with the one before",
    )
    check.set_defaults(func=cmd_check)

    demo = sub.add_parser(
        "demo",
        help="start the embedded reference server and run on it",
        description="Start the embedded SGLang-compatible reference server (a tiny Llama in "
        "torch on CPU, on a free 127.0.0.1 port) and open the dashboard on it. Sized for a "
        "laptop CPU: {samples} prompts of ~{max_prompt_tokens} tokens, {max_new_tokens} new "
        "tokens each (the defaults below).".format(**DEMO_SIZES),
    )
    add_run_options(demo, servers=False, sizes=DEMO_SIZES)
    demo.add_argument("--headless", action="store_true", help="print results instead of the TUI")
    demo.add_argument(
        "--deterministic", action="store_true", help="batch-invariant kernels: k3 must be exactly 0"
    )
    demo.add_argument(
        "--fault",
        default="none",
        choices=("none", "stale-prefix", "window-evict"),
        help="plant a state bug on one cache path",
    )
    demo.add_argument(
        "--page-size",
        type=_pos_int,
        default=1,
        help="the reference server's radix cache page size in tokens (1); a prefix hit is "
        "rounded down to whole pages, as in SGLang",
    )
    demo.add_argument("--theme", help=THEME_HELP)
    demo.add_argument("--yes-flush", action="store_true", help=YES_FLUSH_HELP)
    add_read_only(demo)
    add_screenshot_dir(demo)
    add_report_options(demo)
    demo.set_defaults(func=cmd_demo)

    report = sub.add_parser("report", help="HTML, Markdown, JSON or JUnit reports from a recording")
    add_report_arguments(report)
    report.set_defaults(func=cmd_report)

    replay = sub.add_parser("replay", help="open a recording in the TUI, as it ran")
    replay.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="a .kltui.jsonl recording (default: the newest in the runs folder; see `kltui runs`)",
    )
    pace = replay.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=_float, help="replay at X times the recorded pace")
    pace.add_argument("--instant", action="store_true", help="load everything at once")
    replay.add_argument("--theme", help=THEME_HELP)
    add_read_only(replay)
    add_screenshot_dir(replay)
    replay.add_argument("--headless", action="store_true", help="print the results instead")
    replay.set_defaults(func=cmd_replay)

    runs = sub.add_parser(
        "runs",
        help="list past runs (recordings), newest first; --prune removes old ones",
        description="Recordings in $KLTUI_RUNS_DIR or ~/.local/state/kltui/runs, newest first: "
        "date, servers, verdict, size, path. Retention: `--prune --keep N` and/or "
        "`--older-than DAYS`, or set KLTUI_RUNS_KEEP=N to prune at every recorded run.",
    )
    runs.add_argument("--prune", action="store_true", help="remove old recordings (see below)")
    runs.add_argument(
        "--keep", type=_pos_int, metavar="N", help="with --prune: keep the newest N recordings"
    )
    runs.add_argument(
        "--older-than",
        type=_days,
        metavar="DAYS",
        help="with --prune: remove recordings not written to for DAYS days (e.g. 30 or 30d)",
    )
    runs.add_argument(
        "--dry-run", action="store_true", help="with --prune: list what would go, remove nothing"
    )
    runs.set_defaults(func=cmd_runs)

    web = sub.add_parser(
        "web",
        help="serve the dashboard in a browser (textual-serve): kltui web [--host H] "
        "[--port P] [--read-only] [tui|demo|replay options]; `kltui web --help` for more",
        add_help=False,
    )
    web.add_argument("web_args", nargs=argparse.REMAINDER, help="see `kltui web --help`")

    from kltui.dumps.cli import add_parsers as add_dumps_parsers
    from kltui.dumps.probe_ops import add_parser as add_probe_parser

    add_dumps_parsers(sub)
    add_probe_parser(sub)

    serve = sub.add_parser("serve-reference", help="run the embedded SGLang-compatible server")
    try:
        from kltui.reference.cli_entry import add_arguments
    except ImportError:
        add_arguments = None
    if add_arguments is not None:
        add_arguments(serve)
    serve.set_defaults(func=cmd_serve_reference)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv = ["tui", *argv]
    if argv and argv[0] == "web":
        return _web(argv[1:])
    parser = make_parser()
    args = parser.parse_args(argv)
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
