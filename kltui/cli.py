"""Command line: argument parsing and dispatch. Heavy modules are imported only when needed so
`kltui --help` stays fast (no torch, no textual at import)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from kltui import __version__

SUBCOMMANDS = ("tui", "check", "demo", "replay", "report", "serve-reference")
EXIT_USAGE = 2
EXIT_SERVER = 3

DESCRIPTION = """Live numerical alignment for SGLang (and vLLM as a baseline).

  kltui --server localhost:30000            open the live dashboard
  kltui check --server localhost:30000      headless gate for CI (exit 0 pass, 1 fail)
  kltui demo                                run everything on the embedded reference server
"""

EXIT_CODES = """exit codes: 0 all helpers pass; 1 a threshold is exceeded (or a helper is vacuous or
short of cache hits); 2 usage, config or input-file error; 3 server or protocol error;
130 interrupted (Ctrl-C / SIGTERM; what was measured is kept)."""


def _float(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None


def _pos_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {s!r}")
    return v


def _nonneg_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {s!r}")
    return v


def add_run_options(p: argparse.ArgumentParser, *, servers: bool = True) -> None:
    if servers:
        p.add_argument(
            "--server",
            action="append",
            default=[],
            metavar="HOST:PORT",
            help="SGLang server (repeatable)",
        )
    p.add_argument("--baseline", metavar="HOST:PORT", help="vLLM server for cross_engine")
    p.add_argument(
        "--helpers",
        metavar="LIST",
        help="comma list: match,prefill_cache_hit,decode_cache_hit,cross_engine",
    )
    p.add_argument("--samples", type=_pos_int, help="number of prompts (default 32)")
    p.add_argument("--max-new-tokens", type=_pos_int, help="tokens decoded per sample (512)")
    p.add_argument("--prompts", metavar="FILE", help=".txt, .jsonl or .json prompt file")
    p.add_argument(
        "--max-prompt-tokens",
        type=_pos_int,
        help="seeded truncation to [0.5, 1.5] x N tokens (3000)",
    )
    p.add_argument("--seed", type=int, help="seed of the truncation lengths (0)")
    p.add_argument("--temperature", type=_float, help="0 (default) or 1; others warn")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--threshold", type=_float, help="avg_kl_div gate for every helper")
    g.add_argument("--config", metavar="FILE.yaml", help="YAML config with per (model, tp) gates")
    p.add_argument("--preset", choices=("sglang-ci", "deterministic"))
    p.add_argument("--tail-threshold", type=_float, help="tau for tail fractions (1e-3)")
    p.add_argument(
        "--top-k",
        type=_nonneg_int,
        help="top-k alternatives per position in the drill-down, fetched by a separate "
        "request (5; 0 = off)",
    )
    p.add_argument(
        "--extras",
        type=_nonneg_int,
        metavar="N",
        help="after the gate, fetch top-k and token text around the divergence of the N worst "
        "samples per helper, in a separate request (3; 0 = off)",
    )
    s = p.add_mutually_exclusive_group()
    s.add_argument(
        "--stream",
        action="store_true",
        default=None,
        help="stream the scored decode (default: in the TUI only)",
    )
    s.add_argument("--no-stream", action="store_true", help="never stream /generate")
    p.add_argument(
        "--stream-interval",
        type=_pos_int,
        metavar="N",
        help="tokens per streamed chunk (default: max-new-tokens / 16)",
    )
    p.add_argument("--flush-timeout", type=_float, help="seconds /flush_cache waits for idle")
    p.add_argument("--request-timeout", type=_float, help="seconds to wait for a response")
    p.add_argument("--api-key", help="Bearer key (or env KLTUI_API_KEY); never recorded")
    p.add_argument(
        "--record",
        metavar="FILE",
        help="recording path (default: timestamped file "
        "in $KLTUI_RUNS_DIR or ~/.local/state/kltui/runs)",
    )
    p.add_argument("--no-record", action="store_true", help="do not record this run")
    p.add_argument("--json", metavar="FILE", help="write the JSON result")


def build_config(args: argparse.Namespace):
    from kltui.config import RunConfig, check_helpers, load_config_file

    cfg = RunConfig()
    if getattr(args, "config", None):
        cfg = load_config_file(args.config, cfg)
    if getattr(args, "server", None):
        cfg.servers = list(args.server)
    mapping = {
        "baseline": "baseline",
        "samples": "samples",
        "max_new_tokens": "max_new_tokens",
        "prompts": "prompts",
        "max_prompt_tokens": "max_prompt_tokens",
        "seed": "seed",
        "temperature": "temperature",
        "threshold": "threshold",
        "preset": "preset",
        "tail_threshold": "tail_threshold",
        "flush_timeout": "flush_timeout",
        "request_timeout": "request_timeout",
        "api_key": "api_key",
        "top_k": "top_k",
        "extras": "extras",
        "stream_interval": "stream_interval",
    }
    for arg, attr in mapping.items():
        v = getattr(args, arg, None)
        if v is not None:
            setattr(cfg, attr, v)
    if getattr(args, "helpers", None):
        cfg.helpers = [h.strip() for h in args.helpers.split(",") if h.strip()]
        check_helpers(cfg.helpers, "--helpers")
    if getattr(args, "no_stream", False):
        cfg.stream = False
    elif getattr(args, "stream", None):
        cfg.stream = True
    from kltui.engines.http import normalize_url

    cfg.servers = [normalize_url(s) for s in cfg.servers]
    if cfg.baseline:
        cfg.baseline = normalize_url(cfg.baseline)
        if "cross_engine" not in cfg.helpers:
            cfg.helpers.append("cross_engine")
    elif "cross_engine" in cfg.helpers:
        raise _usage("the cross_engine helper needs --baseline HOST:PORT (a vLLM server)")
    if cfg.prompts:
        from kltui.prompts import load_file

        load_file(cfg.prompts)  # a bad prompt file is exit 2 before any server is contacted
    return cfg


def record_path(args: argparse.Namespace) -> str | None:
    if getattr(args, "no_record", False):
        return None
    if getattr(args, "record", None):
        return args.record
    from kltui.recording import default_recording_path

    return str(default_recording_path())


def _headless(cfg, args: argparse.Namespace) -> int:
    from kltui.headless import run_check
    from kltui.report_cli import report_writer

    rec = record_path(args)
    reports = report_writer(args, recording=rec)  # checks output folders before the run
    return asyncio.run(run_check(cfg, json_path=args.json, record_path=rec, extra_outputs=reports))


def cmd_check(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    if not cfg.servers:
        raise _usage("check needs --server HOST:PORT (or servers: in --config)")
    return _headless(cfg, args)


def cmd_report(args: argparse.Namespace) -> int:
    from kltui.report_cli import cmd_report as report

    return report(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from kltui.reference.launcher import ReferenceServer

    cfg_args = args
    with ReferenceServer(
        deterministic=args.deterministic, fault=args.fault, page_size=args.page_size
    ) as srv:
        print(f"kltui demo: reference server at {srv.url}", file=sys.stderr)
        cfg_args.server = [srv.url]
        cfg = build_config(cfg_args)
        # The demo is sized for a laptop CPU; every default can be overridden on the command line.
        if args.samples is None:
            cfg.samples = 32
        if args.max_new_tokens is None:
            cfg.max_new_tokens = 64
        if args.max_prompt_tokens is None:
            cfg.max_prompt_tokens = 192
        if args.headless or not _tui_available():
            return _headless(cfg, args)
        return _run_tui(cfg, args)


def _tui_available() -> bool:
    try:
        import kltui.tui.app  # noqa: F401
    except ImportError:
        return False
    return True


def _run_tui(cfg, args) -> int:
    from kltui.tui.app import run_app

    return run_app(
        cfg,
        record=record_path(args),
        json_path=getattr(args, "json", None),
        theme=getattr(args, "theme", None),
        watch=getattr(args, "watch", False),
    )


def cmd_tui(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    if not cfg.servers:
        raise _usage("give --server HOST:PORT, or run `kltui demo` for the embedded server")
    if not _tui_available():
        raise _usage("the TUI is not available in this build; use `kltui check`")
    return _run_tui(cfg, args)


def cmd_replay(args: argparse.Namespace) -> int:
    from kltui.recording import read_recording

    rec = read_recording(args.file)  # a bad or newer file fails here in one line, before the UI
    if args.headless:
        from kltui.headless import HeadlessView, make_console
        from kltui.session import SessionStore

        store = SessionStore()
        view = HeadlessView(store, make_console())
        for ev in rec.events:
            store.apply(ev)
            view(ev)
        view.finish()
        return 0
    from kltui.tui.app import run_replay

    return run_replay(args.file, speed=args.speed, instant=args.instant, theme=args.theme)


def cmd_serve_reference(args: argparse.Namespace) -> int:
    from kltui.reference.cli_entry import main as serve_main

    return serve_main(args)


def _usage(msg: str) -> Exception:
    from kltui.engines.errors import UsageError

    return UsageError(msg)


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
    tui.add_argument("--theme", help="kltui-dark (default), kltui-light, kltui-cb, ...")
    tui.add_argument("--watch", action="store_true", help="re-run when the server restarts")
    tui.set_defaults(func=cmd_tui)

    from kltui.report_cli import add_arguments as add_report_arguments
    from kltui.report_cli import add_report_options

    check = sub.add_parser("check", help="headless gate for CI", epilog=EXIT_CODES)
    add_run_options(check)
    add_report_options(check)
    check.set_defaults(func=cmd_check)

    demo = sub.add_parser("demo", help="start the embedded reference server and run on it")
    add_run_options(demo, servers=False)
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
    demo.add_argument("--page-size", type=_pos_int, default=1)
    demo.add_argument("--theme")
    add_report_options(demo)
    demo.set_defaults(func=cmd_demo)

    report = sub.add_parser("report", help="HTML, Markdown, JSON or JUnit reports from a recording")
    add_report_arguments(report)
    report.set_defaults(func=cmd_report)

    replay = sub.add_parser("replay", help="open a recording in the TUI, as it ran")
    replay.add_argument("file", metavar="FILE", help="a .kltui.jsonl recording")
    pace = replay.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=_float, help="replay at X times the recorded pace")
    pace.add_argument("--instant", action="store_true", help="load everything at once")
    replay.add_argument("--theme")
    replay.add_argument("--headless", action="store_true", help="print the results instead")
    replay.set_defaults(func=cmd_replay)

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
    parser = make_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from kltui.engines.errors import UsageError

    try:
        return args.func(args)
    except UsageError as e:
        print(f"kltui: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        print(f"kltui: error: {e}", file=sys.stderr)
        return EXIT_SERVER if os.environ.get("KLTUI_DEBUG") is None else (_ for _ in ()).throw(e)


if __name__ == "__main__":
    sys.exit(main())
