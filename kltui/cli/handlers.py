"""What each `kltui` subcommand does (`kltui tui`, `check`, `demo`, `replay`, `runs`,
`serve-reference`); `parser.py` wires them to their options. Heavy modules are imported inside
the functions so `kltui --help` stays fast (no torch, no textual at import)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from kltui.cli.options import DEMO_SIZES
from kltui.cli.run_checks import check_numbers, check_outputs
from kltui.cli.run_config import build_config, record_path
from kltui.cli.terminal import headless_note, use_tui
from kltui.errors import UsageError, session_exit


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
    """Run `kltui check`."""
    cfg = build_config(args)
    if not cfg.servers and not cfg.router:
        raise UsageError(
            "check needs --server HOST:PORT or --router HOST:PORT (or servers: / fleet: in "
            "--config)"
        )
    return _headless(cfg, args)


def cmd_report(args: argparse.Namespace) -> int:
    """Run `kltui report`."""
    from kltui.cli.report import cmd_report as report

    return report(args)


def demo_config(args: argparse.Namespace, url: str):
    """The RunConfig of `kltui demo` on the reference server at url."""
    args.server = [url]
    cfg = build_config(args)
    # The demo is sized for a laptop CPU; every default can be overridden on the command line.
    for key, value in DEMO_SIZES.items():
        if getattr(args, key) is None:
            setattr(cfg, key, value)
    return cfg


def cmd_demo(args: argparse.Namespace) -> int:
    """Run `kltui demo`: start the reference server and run on it."""
    from kltui.reference.launcher import ReferenceServer

    check_numbers(args)  # refused before the reference server starts
    check_outputs(args)
    with ReferenceServer(
        deterministic=args.deterministic, fault=args.fault, page_size=args.page_size
    ) as srv:
        print(f"kltui demo: reference server at {srv.url}", file=sys.stderr)
        cfg = demo_config(args, srv.url)
        if not use_tui(args):
            headless_note("kltui demo", args)
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
    """Run the live dashboard."""
    cfg = build_config(args)
    dumps_result = None
    if args.dumps:
        from kltui.dumps.run import load_result

        dumps_result = load_result(args.dumps)  # a bad file is exit 2 before anything opens
    if not cfg.servers and dumps_result is not None:
        from kltui.tui.launch import run_dumps_viewer

        return run_dumps_viewer(dumps_result, args.theme or cfg.theme)
    if not cfg.servers and not cfg.router:
        raise UsageError("give --server HOST:PORT, or run `kltui demo` for the embedded server")
    if cfg.servers:
        from kltui.run.fleet import refuse_routers

        asyncio.run(refuse_routers(cfg.servers, cfg.server_api_key()))
    if not use_tui(args):
        headless_note("kltui", args)
        return _headless(cfg, args)
    return _run_tui(cfg, args, dumps_result)


def cmd_replay(args: argparse.Namespace) -> int:
    """Run `kltui replay`: a recording in the TUI or headless."""
    from kltui.session.recording import read_recording

    if args.file is None:
        from kltui.session.runs import newest_entry

        args.file = str(newest_entry())
        from kltui.words.runs import opened_newest

        print(opened_newest(args.file, Path(args.file).is_dir()), file=sys.stderr)
    if Path(args.file).is_dir():
        return _replay_sweep(args)
    rec = read_recording(args.file)  # a bad or newer file fails here in one line, before the UI
    if not use_tui(args):
        headless_note("kltui replay", args)
        from kltui.console import make_console
        from kltui.outputs.headless import HeadlessView
        from kltui.session.fold import fold

        console = make_console()
        views: list[HeadlessView] = []

        def on_run(store):  # each run of the file is printed as `kltui check` printed it
            if views:
                views[-1].finish()
            views.append(HeadlessView(store, console))
            return views[-1]

        fold(rec, on_run)
        if views:
            views[-1].finish()
        # the exit code `kltui check` gave the recorded runs (a run cut short has no verdict)
        return session_exit(v.store.finished.verdict if v.store.finished else None for v in views)
    from kltui.tui.launch import run_replay

    return run_replay(
        args.file,
        speed=args.speed,
        # a reviewer opening a recording wants it at once; the recorded pace only on request
        instant=args.instant or args.speed is None,
        theme=args.theme,
        read_only=args.read_only,
        screenshot_dir=args.screenshot_dir,
    )


def _replay_sweep(args: argparse.Namespace) -> int:
    """`kltui replay FOLDER`: a `kltui ablate` sweep folder, as `kltui ablate --replay` shows
    it (the matrix on a terminal, the console with --headless)."""
    from kltui.cli.ablate import replay as replay_sweep

    args.replay = args.file
    for name in ("json", "md", "junit", "html"):
        setattr(args, name, getattr(args, name, None))
    return replay_sweep(args)


def cmd_runs(args: argparse.Namespace) -> int:
    """Run `kltui runs`: list (or prune) past recordings."""
    from kltui.session.recording import default_runs_dir
    from kltui.session.runs import list_runs, list_sweeps, prune, table
    from kltui.untrusted import escape_controls
    from kltui.words.runs import SWEEPS_HEAD, listed, pruned, pruned_entry, sweep_table

    folder = default_runs_dir()
    if args.prune:
        if args.keep is None and args.older_than is None:
            raise UsageError("--prune needs --keep N and/or --older-than DAYS")
        removed, errors, others = prune(
            folder, keep=args.keep, older_than_days=args.older_than, dry_run=args.dry_run
        )
        for r in removed:
            print(pruned_entry(r, args.dry_run, clean=escape_controls))
        print(pruned(removed, others, args.dry_run), file=sys.stderr)
        for err in errors:
            print(f"kltui: error: {err}", file=sys.stderr)
        return 1 if errors else 0
    runs = list_runs(folder)
    sweeps = list_sweeps(folder)
    if not runs and not sweeps:
        print(f"no recordings in {escape_controls(folder)}", file=sys.stderr)
        return 0
    if runs:
        for line in table(runs, clean=escape_controls):
            print(line)
    if sweeps:
        if runs:
            print()
        print(SWEEPS_HEAD)
        for line in sweep_table(sweeps, clean=escape_controls):
            print(line)
    total = sum(r.size for r in runs) + sum(s.size for s in sweeps)
    print(listed(len(runs), len(sweeps), total, escape_controls(folder)), file=sys.stderr)
    return 0


def cmd_serve_reference(args: argparse.Namespace) -> int:
    """Run `kltui serve-reference`."""
    from kltui.reference.cli_entry import main as serve_main

    return serve_main(args)
