"""`kltui monitor`: the run of `kltui check` as a canary probe every `--every`, each probe
recorded in the runs folder (the last --keep N probes kept), a line per probe and per change of
reading, and with `--prometheus` the readings as metrics on /metrics (docs/MONITORING.md)."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from pathlib import Path

from kltui.argtypes import pos_int
from kltui.cli.options import (
    GATE_SETTINGS,
    INPUT_SETTINGS,
    MULTITURN_OPTIONS,
    REQUEST_SETTINGS,
    SERVER_SETTINGS,
    add_settings,
)
from kltui.errors import UsageError

# a canary's size: small enough to run every minute beside real traffic, enough samples for the
# diagnosis to name a state bug on a deterministic server (docs/MONITORING.md: the load)
MONITOR_SIZES = {"samples": 8, "max_new_tokens": 32, "max_prompt_tokens": 512}
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration_arg(text: str) -> float:
    """`30`, `30s`, `5m`, `1h`, `1d` -> seconds (argparse type)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"a duration like 30s, 5m or 1h, got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `monitor` subcommand."""
    p = sub.add_parser(
        "monitor",
        help="probe servers every --every, with Prometheus metrics (docs/MONITORING.md)",
        description="Run kltui check's helpers as a small canary probe every --every against "
        "the servers (or a router's replicas). Each probe is a recording in the runs folder "
        "(the last --keep N of them are kept); a change of reading between probes (a condition that "
        "appears or clears) is printed with both recordings. --prometheus serves the readings "
        "on /metrics. SIGTERM or Ctrl-C stops it cleanly, between or during a probe (exit 0).",
    )
    add_settings(p, SERVER_SETTINGS, MONITOR_SIZES)
    add_settings(p, INPUT_SETTINGS, MONITOR_SIZES)
    g = p.add_mutually_exclusive_group()
    add_settings(g, ("threshold",), MONITOR_SIZES)
    g.add_argument("--config", metavar="FILE.yaml", help="YAML config with per (model, tp) gates")
    add_settings(p, GATE_SETTINGS + REQUEST_SETTINGS + ("stress",), MONITOR_SIZES)
    # `--helpers multiturn` probes take the multiturn helper's shape as check does (issue 58)
    add_settings(p.add_argument_group("multiturn"), MULTITURN_OPTIONS, MONITOR_SIZES)
    _schedule_options(p)
    _output_options(p)
    p.add_argument("--headless", action="store_true", help="print lines instead of the TUI")
    p.set_defaults(func=cmd_monitor)


def _schedule_options(p: argparse.ArgumentParser) -> None:
    """When probes start, how many, how long one may take."""
    p.add_argument(
        "--every",
        type=duration_arg,
        default=300.0,
        metavar="DURATION",
        help="start a probe every DURATION (30s, 5m, 1h; default 5m; 0: back to back)",
    )
    p.add_argument(
        "--probes",
        type=pos_int,
        metavar="N",
        help="stop after N probes (default: run until stopped)",
    )
    p.add_argument(
        "--probe-timeout",
        type=duration_arg,
        metavar="DURATION",
        help="cut a probe short after DURATION (default: 10m); counted as a timeout error",
    )


def _output_options(p: argparse.ArgumentParser) -> None:
    """Where the readings go: Prometheus metrics and the probes' recordings."""
    p.add_argument(
        "--prometheus",
        metavar="[HOST:]PORT",
        help="serve the metrics on http://HOST:PORT/metrics (HOST default 127.0.0.1)",
    )
    p.add_argument(
        "--prometheus-public",
        action="store_true",
        help="allow --prometheus on an address other than loopback",
    )
    p.add_argument(
        "--record",
        metavar="FILE",
        help="probe 1's recording (probe N: FILE-N.kltui.jsonl; default: the runs folder)",
    )
    p.add_argument("--no-record", action="store_true", help="do not record the probes")
    p.add_argument(
        "--keep",
        type=pos_int,
        metavar="N",
        help="keep the recordings of the last N probes, removing older ones (default: 288, a "
        "day at --every 5m)",
    )


def _recordings(args: argparse.Namespace):
    from kltui.run.driver import nth_recording
    from kltui.run.monitor import probe_recordings
    from kltui.session.recording import default_runs_dir

    if args.no_record:
        return None
    if args.record:
        return lambda n: nth_recording(args.record, n)
    return probe_recordings(default_runs_dir())


def _prune() -> None:
    """KLTUI_RUNS_KEEP before each probe, as every recorded run does (cli.run_config)."""
    from kltui.session.runs import keep_setting, prune

    keep = keep_setting()
    if keep is not None:
        for err in prune(keep=max(1, keep - 1), older_than_days=None)[1]:
            print(f"kltui: {err}", file=sys.stderr)


def cmd_monitor(args: argparse.Namespace) -> int:
    """Run `kltui monitor`."""
    from kltui.cli.run_config import build_config
    from kltui.cli.terminal import headless_note, use_tui

    cfg = build_config(args)
    from kltui.run.config import RunConfig

    default = RunConfig()
    for key, value in MONITOR_SIZES.items():  # a canary's size, unless given or configured
        if getattr(args, key, None) is None and getattr(cfg, key) == getattr(default, key):
            setattr(cfg, key, value)
    if not cfg.servers and not cfg.router:
        raise UsageError("monitor needs --server HOST:PORT or --router HOST:PORT")
    if args.record and Path(args.record).is_dir():
        raise UsageError(f"--record {args.record}: is a folder; give a file name")
    metrics = None
    listen = None
    if args.prometheus:
        from kltui.outputs.prometheus import MonitorMetrics, parse_listen

        listen = parse_listen(args.prometheus, args.prometheus_public)
        metrics = MonitorMetrics(router=cfg.router, every=args.every, servers=cfg.servers)
    from kltui.run.monitor import KEEP_PROBES, Monitor, recording_estimate
    from kltui.words.probe import keep_words

    record = _recordings(args)
    keep = args.keep or KEEP_PROBES
    monitor = Monitor(
        cfg,
        every=args.every,
        probes=args.probes,
        probe_timeout=args.probe_timeout or 600.0,
        record=record,
        before_probe=None if args.no_record or args.record else _prune,
        keep=keep,
    )
    kept = keep_words(keep, recording_estimate(cfg)) if record is not None else None
    server = metrics.serve(*listen) if metrics is not None and listen is not None else None
    try:
        if use_tui(args):
            from kltui.tui.launch import run_monitor_app
            from kltui.tui.monitor_feed import MonitorFeed

            where = f"http://{listen[0]}:{listen[1]}/metrics" if listen else None
            feed = MonitorFeed(monitor, metrics, where, notes=[kept] if kept else [])
            return run_monitor_app(feed, theme=cfg.theme)
        headless_note("kltui monitor", args)
        if kept:
            print(f"kltui monitor: {kept}", file=sys.stderr)
        return asyncio.run(_headless(monitor, metrics, listen))
    finally:
        if server is not None:
            server.shutdown()


async def _headless(monitor, metrics, listen) -> int:
    from kltui.console import make_console
    from kltui.outputs.monitor_console import ConsoleMonitor
    from kltui.run.driver import cancel_on_signals

    if listen is not None:
        print(f"kltui monitor: metrics on http://{listen[0]}:{listen[1]}/metrics", file=sys.stderr)
    with cancel_on_signals():
        return await monitor.run(ConsoleMonitor(make_console(), metrics))
