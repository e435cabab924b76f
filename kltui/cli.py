"""Command line: argument parsing and dispatch. Heavy modules are imported only when needed so
`kltui --help` stays fast (no torch, no textual at import)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from kltui import __version__

SUBCOMMANDS = (
    "tui", "check", "demo", "replay", "runs", "report", "serve-reference", "web", "dumps",
    "probe-ops",
)  # fmt: skip
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


YES_FLUSH_HELP = (
    "flush every server's radix cache without asking first (the TUI asks once per server "
    "that is not on loopback or is serving other requests; /flush_cache affects every client)"
)


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


def _prompt_cap(s: str) -> int:
    """--max-prompt-tokens: N > 0 cuts, 0 or `none` sends prompts uncut."""
    if s.strip().lower() in ("0", "none", "off"):
        return 0
    return _pos_int(s)


# What a run measures by default, and the demo's own sizes (small enough for a laptop CPU).
RUN_SIZES = {"samples": 32, "max_new_tokens": 512, "max_prompt_tokens": 3000}
DEMO_SIZES = {"samples": 32, "max_new_tokens": 64, "max_prompt_tokens": 192}
THEME_HELP = "kltui-dark (default), kltui-light, kltui-cb (colour-blind-safe heat scale)"


def add_run_options(
    p: argparse.ArgumentParser, *, servers: bool = True, sizes: dict[str, int] = RUN_SIZES
) -> None:
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
    p.add_argument("--samples", type=_pos_int, help=f"number of prompts ({sizes['samples']})")
    p.add_argument(
        "--max-new-tokens",
        type=_pos_int,
        help=f"tokens decoded per sample ({sizes['max_new_tokens']})",
    )
    p.add_argument("--prompts", metavar="FILE", help=".txt, .jsonl or .json prompt file")
    p.add_argument(
        "--max-prompt-tokens",
        type=_prompt_cap,
        help=f"seeded truncation to [0.5, 1.5] x N tokens ({sizes['max_prompt_tokens']}); 0 or "
        "none: no truncation. A .json of token-id lists (SGLang's input-id cache) is sent uncut "
        "unless N is given",
    )
    p.add_argument("--seed", type=int, help="seed of the truncation lengths (0)")
    p.add_argument("--temperature", type=_float, help="0 (default) or 1; others warn")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--threshold", type=_float, help="avg_kl_div gate for every helper")
    g.add_argument("--config", metavar="FILE.yaml", help="YAML config with per (model, tp) gates")
    p.add_argument(
        "--preset",
        choices=("sglang-ci", "deterministic"),
        help="thresholds: SGLang CI's per-model values, or bit-exact (1e-9)",
    )
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
        "dump_dir": "dump_dir",
        "extras": "extras",
        "stream_interval": "stream_interval",
    }
    for arg, attr in mapping.items():
        v = getattr(args, arg, None)
        if v is not None:
            setattr(cfg, attr, v)
    if getattr(args, "max_prompt_tokens", None) is not None:
        cfg.max_prompt_tokens = args.max_prompt_tokens or None  # 0: no truncation
        cfg.prompt_cut_asked = True
    if getattr(args, "helpers", None):
        cfg.helpers = [h.strip() for h in args.helpers.split(",") if h.strip()]
        check_helpers(cfg.helpers, "--helpers")
    if getattr(args, "no_stream", False):
        cfg.stream = False
    elif getattr(args, "stream", None):
        cfg.stream = True
    if getattr(args, "yes_flush", False):
        cfg.yes_flush = True
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
    from kltui.runs import keep_setting, prune

    keep = keep_setting()
    if keep is not None:
        # KLTUI_RUNS_KEEP: this run's recording will be the newest, so keep - 1 older ones stay
        removed, errors = prune(keep=max(1, keep - 1), older_than_days=None)
        for err in errors:
            print(f"kltui: {err}", file=sys.stderr)
        if removed:
            print(
                f"kltui: removed {len(removed)} old recording(s) (KLTUI_RUNS_KEEP={keep})",
                file=sys.stderr,
            )
    return str(default_recording_path())


def _headless(cfg, args: argparse.Namespace) -> int:
    from kltui.headless import run_check
    from kltui.report_cli import report_writer

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
        raise _usage("check needs --server HOST:PORT (or servers: in --config)")
    return _headless(cfg, args)


def cmd_report(args: argparse.Namespace) -> int:
    from kltui.report_cli import cmd_report as report

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

    with ReferenceServer(
        deterministic=args.deterministic, fault=args.fault, page_size=args.page_size
    ) as srv:
        print(f"kltui demo: reference server at {srv.url}", file=sys.stderr)
        cfg = demo_config(args, srv.url)
        if args.headless or not _tui_available():
            return _headless(cfg, args)
        return _run_tui(cfg, args)


def _tui_available() -> bool:
    try:
        import kltui.tui.app  # noqa: F401
    except ImportError:
        return False
    return True


def _run_tui(cfg, args, dumps_result: dict | None = None) -> int:
    from kltui.tui.app import run_app

    return run_app(
        cfg,
        record=record_path(args),
        json_path=getattr(args, "json", None),
        theme=getattr(args, "theme", None),
        watch=getattr(args, "watch", False),
        read_only=getattr(args, "read_only", False),
        dumps_result=dumps_result,
    )


def cmd_tui(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    dumps_result = None
    if args.dumps:
        from kltui.dumps.run import load_result

        dumps_result = load_result(args.dumps)  # a bad file is exit 2 before anything opens
    if not _tui_available():
        raise _usage("the TUI is not available in this build; use `kltui check`")
    if not cfg.servers and dumps_result is not None:
        from kltui.tui.app import run_dumps_viewer

        return run_dumps_viewer(dumps_result, args.theme or cfg.theme)
    if not cfg.servers:
        raise _usage("give --server HOST:PORT, or run `kltui demo` for the embedded server")
    return _run_tui(cfg, args, dumps_result)


def cmd_replay(args: argparse.Namespace) -> int:
    from kltui.recording import read_recording

    if args.file is None:
        from kltui.runs import newest

        args.file = str(newest())
        print(f"kltui replay: newest recording {args.file}", file=sys.stderr)
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

    return run_replay(
        args.file,
        speed=args.speed,
        instant=args.instant,
        theme=args.theme,
        read_only=args.read_only,
    )


def cmd_runs(args: argparse.Namespace) -> int:
    from kltui.recording import default_runs_dir
    from kltui.runs import human_size, list_runs, prune, table
    from kltui.tui.text import escape_controls

    folder = default_runs_dir()
    if args.prune:
        if args.keep is None and args.older_than is None:
            raise _usage("--prune needs --keep N and/or --older-than DAYS")
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


def _days(s: str) -> float:
    v = _float(s.removesuffix("d"))
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {s!r}")
    return v


def cmd_serve_reference(args: argparse.Namespace) -> int:
    from kltui.reference.cli_entry import main as serve_main

    return serve_main(args)


def _usage(msg: str) -> Exception:
    from kltui.engines.errors import UsageError

    return UsageError(msg)


def add_read_only(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--read-only",
        action="store_true",
        help="keys that act on servers or files (r re-run, s screenshot) are off (`kltui web`)",
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
    tui.set_defaults(func=cmd_tui)

    from kltui.report_cli import add_arguments as add_report_arguments
    from kltui.report_cli import add_report_options

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
    from kltui.probe_ops import add_parser as add_probe_parser

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


def _web(argv: list[str]) -> int:
    from kltui.engines.errors import UsageError
    from kltui.web import main as web_main

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
