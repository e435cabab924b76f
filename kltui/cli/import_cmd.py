"""`kltui import FILE`: trainer and rollout logprobs of the same tokens (kltui-rl JSONL or
Parquet, a verl batch, a slime train dump) as a run: console tables, reports, a gate.

`kltui FILE` (a file that is not a recording) opens the same import in the dashboard.
Imports stay inside functions: `kltui --help` builds this parser and must stay fast.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from kltui.argtypes import number, pos_int

EPILOG = (
    "Exit codes: 0 every gate passed, 1 a gate failed, 2 bad input (the file cannot be read, "
    "or some records could not be used: each is named with its record number and field, and "
    "the rest is still measured and reported), 3 the --server could not be reached. "
    "Schema and formulas: docs/RL.md."
)


def add_parser(sub) -> None:
    """The `import` subcommand."""
    from kltui.cli.report import add_report_options

    p = sub.add_parser(
        "import",
        help="trainer vs rollout logprobs from a file (RL training-inference mismatch)",
        description="Read per-token logprob pairs (kltui-rl JSONL/Parquet, a verl batch, a "
        "slime train dump .pt) and show the mismatch as kltui shows a run: k3 per token, "
        "tails, first divergence, verl's rollout_corr and slime's mismatch metrics.",
        epilog=EPILOG,
    )
    p.add_argument("file", metavar="FILE", help="the file to import (docs/RL.md)")
    p.add_argument(
        "--format",
        default="auto",
        choices=("auto", "kltui-rl", "verl", "slime"),
        help="how to read FILE (auto: its header, else its field names)",
    )
    _gate_options(p)
    p.add_argument(
        "--show",
        type=pos_int,
        default=2048,
        metavar="N",
        help="samples the heatmap and drill-down hold: the first N/2 and the N/2 worst (2048); "
        "every figure covers every record",
    )
    p.add_argument("--tokenizer", metavar="PATH", help="a local tokenizer for token text")
    p.add_argument("--record", metavar="OUT", help="also write the run as a .kltui.jsonl recording")
    p.add_argument("--json", metavar="OUT", help="the JSON result (docs/JSON.md)")
    _server_options(p)
    add_report_options(p)
    p.add_argument("--tui", action="store_true", help="open the dashboard (as `kltui FILE` does)")
    p.add_argument("--theme", help="the dashboard's theme")
    p.set_defaults(func=cmd_import)


def _gate_options(p: argparse.ArgumentParser) -> None:
    """What the import is gated on: avg_kl_div, any metric, the tail, slime's veto."""
    p.add_argument(
        "--threshold",
        type=number,
        metavar="X",
        help="gate: avg_kl_div (mean over samples of mean k3) must be below X "
        "(default 0.002, SGLang CI's common value; no RL framework sets one)",
    )
    p.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="NAME<=X",
        help="another gate on any metric, e.g. k3_kl<=1e-3 or "
        "mis_rs_catastrophic_seq_fraction<=0.01 (repeatable)",
    )
    p.add_argument(
        "--tail-threshold",
        type=number,
        default=1e-3,
        metavar="TAU",
        help="a token is in the tail when its k3 is above TAU (1e-3)",
    )
    p.add_argument(
        "--veto-threshold",
        type=number,
        default=1e-4,
        metavar="X",
        help="slime's rs_veto_threshold for the catastrophic token/sequence fractions (1e-4, "
        "as in slime's mis.yaml)",
    )


def _server_options(p: argparse.ArgumentParser) -> None:
    """Re-scoring the worst shown samples on a live SGLang server."""
    p.add_argument(
        "--server",
        metavar="URL",
        help="re-score the worst shown samples on this SGLang server now: a teacher-forced "
        "prefill (trainer / rollout as recorded / server now) and the match helper on their "
        "prompts (the server's decode against its prefill)",
    )
    p.add_argument(
        "--rescore",
        type=pos_int,
        default=64,
        metavar="N",
        help="with --server: how many of the worst shown samples (64)",
    )
    p.add_argument("--api-key", metavar="KEY", help="the --server's API key (or KLTUI_API_KEY)")


def options(args: argparse.Namespace):
    """The ImportOptions of a command line (gates checked before the file is read)."""
    from kltui.rl.gate import check_gate_names, parse_gate
    from kltui.rl.stream import ImportOptions

    gates = [parse_gate(g) for g in args.gate]
    check_gate_names(gates)
    texts = None
    if args.tokenizer:
        from kltui.run.tokenizer import load

        texts = load(args.tokenizer).token_texts
    # with --server the re-scoring is under way: no command to suggest
    hint = None if args.server else f"kltui import {args.file} --server URL"
    return ImportOptions(
        adapter=args.format,
        threshold=args.threshold,
        tail_threshold=args.tail_threshold,
        veto=args.veto_threshold,
        gates=gates,
        keep=args.show,
        texts=texts,
        server_hint=hint,
        rescore=args.rescore,
    )


def cmd_import(args: argparse.Namespace) -> int:
    """Run `kltui import`."""
    from kltui.cli.report import report_writer
    from kltui.importer.reader import open_source

    opts = options(args)
    source = open_source(args.file, opts.adapter)  # an unreadable file fails here, in one line
    write = report_writer(args, args.record)
    api_key = None
    if args.server:
        from kltui.engines.http import normalize_url, resolve_api_key
        from kltui.rl.headless import with_server

        args.server = normalize_url(args.server)  # a bad address is one line before the file
        api_key = resolve_api_key(args.api_key)
        with_server(opts, args.server, api_key)
    if args.tui:
        from kltui.tui.import_launch import run_import_app

        return run_import_app(args.file, opts, source, theme=args.theme)
    from kltui.outputs.rl_console import ImportConsole
    from kltui.rl.headless import run_import

    store, code = asyncio.run(
        run_import(
            args.file,
            opts,
            source,
            record=args.record,
            view=ImportConsole(),
        )
    )
    if args.json:
        from kltui.outputs.rl_json import write_import_json

        write_import_json(store, args.json)
    if write is not None:
        for path in write(store):
            if path != "-":
                print(f"kltui import: wrote {path}", file=sys.stderr)
    return code
