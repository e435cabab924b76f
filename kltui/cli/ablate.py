"""`kltui ablate`: from "it diverges" to the setting that causes it, one knob at a time.

Its parser (`add_parser`) and what it does (`cmd_ablate`): the options are `check`'s run options
(`options.add_run_options`) plus the sweep's own; the sweep itself is `run/ablate.py` (its
folder `run/sweep_manifest.py`), its outputs `outputs/ablation.py`. Imports stay inside
functions: `kltui --help` builds this parser.
"""

from __future__ import annotations

import argparse

from kltui.argtypes import number, pos_int
from kltui.cli.options import add_run_options, add_settings
from kltui.cli.run_config import build_config
from kltui.cli.terminal import use_tui
from kltui.errors import UsageError

ABLATE_EXIT_CODES = """exit codes: 0 the verdict answers the question (localized, reduced, or not reproduced:
the base passes at the floor); 1 it does not (no single knob explains it, or inconclusive);
2 usage or config error (an unknown knob is refused before anything starts); 3 the base did not
start (or its --help could not be read), a server to attach to does not answer, or no other
configuration was measured; 130 interrupted (Ctrl-C / SIGTERM: every server is stopped, what was
measured is kept)."""

DESCRIPTION = """Which setting causes a divergence: kltui starts the server once per configuration
(a base, then one knob changed at a time), runs the helpers on the same prompts and ids, and
compares each configuration with the base.

  kltui ablate --launch "python -m sglang.launch_server --model-path M" \\
      --vary attention-backend=fa3,triton --vary cuda-graph=off
  kltui ablate --server base:30000 --server other:30000     attach to running servers
  kltui ablate --replay FOLDER                              re-read a sweep folder

On a terminal the sweep opens in the TUI: a matrix of the configurations that fills in as they
run (Enter opens one configuration's dashboard); the console's table follows when it closes.
--headless (or output that is not a terminal, such as CI) prints the console as it goes.

Knobs: attention-backend, sampling-backend, cuda-graph, radix-cache, page-size,
chunked-prefill-size, deterministic, dtype, kv-cache-dtype, tp, torch-compile, or any raw flag
(--vary "--triton-attention-num-kv-splits=1,8"). Each configuration's server log and recording,
and the manifest ablation.json, go to one sweep folder (ablate-<id>/ in the runs folder, or
--folder DIR). No server outlives kltui, however it ends."""


# check's run options kltui ablate refuses (cmd_ablate says why): the baseline's
BASELINE_OPTIONS = ("baseline", "baseline-log", "hf-dtype", "hf-device", "hf-attn", "hf-batch-size")
NOT_OFFERED = ("record", "no-record", *BASELINE_OPTIONS)


def join_raw_varies(argv: list[str]) -> list[str]:
    """`--vary "--flag=1,8"` as `--vary=--flag=1,8`: argparse reads a value that starts with
    `--` as an option of its own ("expected one argument"), and a raw flag is such a value."""
    out: list[str] = []
    words = iter(argv)
    for w in words:
        if w == "--":
            out += [w, *words]
            break
        if w == "--vary":
            nxt = next(words, None)
            if nxt is None:
                out.append(w)
            elif nxt.startswith("-") and "=" in nxt:
                out.append(f"--vary={nxt}")
            else:
                out += [w, nxt]
            continue
        out.append(w)
    return out


def _sweep_options(g) -> None:
    """The sweep's own options: what to launch or attach to, what to vary, where it goes."""
    g.add_argument(
        "--launch",
        metavar="CMD",
        help="the base server's launch command, one string split as a shell would (kltui "
        "sets its --host and --port)",
    )
    g.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="KNOB=V1,V2",
        help="a knob and the values to try, one at a time against the base (repeatable)",
    )
    g.add_argument(
        "--pairs",
        action="store_true",
        help="after the single knobs, the two knobs that moved the result most, together",
    )
    g.add_argument(
        "--chain",
        action="store_true",
        help="launch mode, after a localized condition-1 verdict: relaunch the base with SGLang's "
        "dumper and no CUDA graphs, check it still diverges, run kltui dumps and probe the "
        "first divergent module's op (setting -> module -> op in one report)",
    )
    g.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="URL",
        help="attach mode: a running SGLang server (repeatable; the first is the base); "
        "nothing is launched",
    )
    g.add_argument(
        "--start-timeout",
        type=number,
        metavar="S",
        help="seconds a launched server has to answer /health (600)",
    )
    g.add_argument(
        "--parallel",
        type=pos_int,
        metavar="N",
        help="configurations at once (1: one after another, for one GPU); an SGLang command "
        "gets --mem-fraction-static 0.85/N unless it sets one",
    )
    g.add_argument(
        "--folder",
        metavar="DIR",
        help="the sweep folder, new or empty (default: ablate-<id>/ in the runs folder)",
    )
    g.add_argument(
        "--replay",
        metavar="FOLDER",
        help="re-read a sweep folder (its recordings and ablation.json) and print and write "
        "the same outputs; launches nothing",
    )


def add_parser(sub) -> argparse.ArgumentParser:
    """The `ablate` subcommand on `kltui`'s subparsers."""
    p = sub.add_parser(
        "ablate",
        help="which setting causes a divergence: launch a server per configuration (or attach "
        "to running ones) and compare each with the base",
        description=DESCRIPTION,
        epilog=ABLATE_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _sweep_options(p.add_argument_group("the sweep"))
    g = p.add_argument_group("the TUI")
    g.add_argument(
        "--headless",
        action="store_true",
        help="print the sweep on the console instead of the TUI's matrix (the default when "
        "stdin or stdout is not a terminal)",
    )
    add_settings(g, ("theme",))
    g.add_argument(
        "--screenshot-dir",
        metavar="DIR",
        help="where s saves its SVG screenshots (default: the runs folder)",
    )
    add_run_options(p, servers=False)
    for action in p._actions:
        # check's options that have no meaning here are refused by cmd_ablate: not offered
        if set(NOT_OFFERED) & {o.removeprefix("--") for o in action.option_strings}:
            action.help = argparse.SUPPRESS
    g = p.add_argument_group("reports")
    g.add_argument(
        "--html",
        metavar="OUT",
        help="self-contained HTML report: the table, the verdict, failures with their log tails",
    )
    g.add_argument("--md", metavar="OUT", help="Markdown report: the table and the verdict")
    g.add_argument("--junit", metavar="OUT", help="JUnit XML: one test case per configuration")
    p.set_defaults(func=cmd_ablate)
    return p


def _refuse(args: argparse.Namespace, names: tuple[str, ...], why: str) -> None:
    for name in names:
        value = getattr(args, name.replace("-", "_"), None)
        if value not in (None, False, []):
            raise UsageError(f"--{name}: {why}")


def cmd_ablate(args: argparse.Namespace) -> int:
    """Run `kltui ablate`."""
    _refuse(
        args,
        ("record", "no-record"),
        "kltui ablate records every configuration in its sweep folder (--folder DIR)",
    )
    if args.replay:
        _refuse(
            args,
            ("launch", "vary", "server", "pairs", "chain", "folder", "parallel", "start-timeout"),
            "--replay re-reads a sweep folder and runs nothing",
        )
        return replay(args)
    _refuse(
        args,
        BASELINE_OPTIONS,
        "kltui ablate compares configurations of one SGLang server (cross_engine is not a knob)",
    )
    from pathlib import Path

    from kltui.run.config import AblateSection

    cfg = build_config(args)
    sec = cfg.ablate or AblateSection()
    launch = args.launch if args.launch is not None else sec.launch
    servers = list(args.server or sec.servers)
    varies = list(args.vary or sec.vary)
    pairs = bool(args.pairs or sec.pairs)
    chain = bool(args.chain or sec.chain)
    start_timeout = args.start_timeout or sec.start_timeout or 600.0
    if not start_timeout > 0:
        raise UsageError(f"--start-timeout {start_timeout!r}: must be a positive number of seconds")
    parallel = args.parallel or sec.parallel or 1
    if launch and servers:
        raise UsageError(
            "give --launch (kltui starts each configuration) or --server (attach to running "
            "servers), not both"
        )
    if not launch and not servers:
        raise UsageError(
            "ablate needs --launch CMD with --vary KNOB=V1,V2, or --server URL --server URL "
            "(or an ablate: section in --config)"
        )
    from kltui.run import ablate as sweep_mod

    folder = Path(args.folder) if args.folder else sweep_mod.sweep_folder()
    if servers:
        if varies or pairs or chain:
            raise UsageError(
                "--vary, --pairs and --chain need --launch: attach mode reads each server's "
                "settings and launches nothing"
            )
        from kltui.cli.run_checks import check_duplicate_servers

        urls = sweep_mod.attach_urls(servers)
        check_duplicate_servers(urls, "--server")
        spec = sweep_mod.SweepSpec(
            cfg, folder, servers=tuple(urls), start_timeout=start_timeout, parallel=parallel
        )
        return _run(args, spec)
    args.chain = chain
    argv = _split(launch)
    for v in varies:  # a typo in a spec is refused before the server's --help is even read
        from kltui.ablate.knobs import parse_vary

        parse_vary(v)
    spec = sweep_mod.SweepSpec(
        cfg,
        folder,
        launch=tuple(argv),
        varies=tuple(varies),
        pairs=pairs,
        start_timeout=start_timeout,
        parallel=parallel,
    )
    return _run(args, spec)


def _split(launch) -> list[str]:
    import shlex

    if isinstance(launch, list):
        return [str(w) for w in launch]
    try:
        argv = shlex.split(str(launch))
    except ValueError as e:
        raise UsageError(f"--launch {launch!r}: {e}") from None
    if not argv:
        raise UsageError("--launch: the command is empty")
    return argv


def _run(args: argparse.Namespace, spec) -> int:
    import asyncio
    import time

    from kltui.console import make_console
    from kltui.outputs.ablation import SweepConsole
    from kltui.run import ablate as sweep_mod
    from kltui.run.driver import cancel_on_signals
    from kltui.untrusted import console_markup
    from kltui.words.ablation_sweep import sweep_start

    console = make_console()
    t0 = time.monotonic()
    plan = configs = None
    if spec.mode == "launch":
        plan = sweep_mod.prepare(spec)  # reads --help: an unknown knob is refused here
        configs = plan.configs
    help_s = time.monotonic() - t0
    if use_tui(args):
        if spec.mode == "attach":  # a server that does not answer: one line, before the TUI
            configs = asyncio.run(sweep_mod.attach_plan(spec))
        from kltui.tui.sweep_feed import SweepFeed

        feed = SweepFeed(
            spec,
            plan=plan,
            configs=configs,
            help_s=help_s,
            t0=t0,
            chain=bool(getattr(args, "chain", False)),
        )
        return _tui(args, feed, console)

    async def go():
        nonlocal configs
        if spec.mode == "attach":
            configs = await sweep_mod.attach_plan(spec)
        line = sweep_start([c.name for c in configs or ()], str(spec.folder))
        console.print(console_markup(line), soft_wrap=True)
        for line in (s.line() for s in plan.skipped) if plan is not None else ():
            console.print(console_markup(line), soft_wrap=True)
        view = SweepConsole(console, spec.parallel)
        with cancel_on_signals():
            sweep = await sweep_mod.run_sweep(
                spec,
                view,
                configs=None if plan is not None else configs,
                p=plan,
                help_s=help_s,
                t0=t0,
            )
            if getattr(args, "chain", False) and not sweep.interrupted:
                await _chain(spec, sweep, view, console)
            return sweep

    sweep = asyncio.run(go())
    return _finish(args, sweep, console)


async def _chain(spec, sweep, view, console) -> None:
    """`--chain`: setting -> module -> op on the finished sweep, kept in its manifest."""
    from kltui.dumps.chain import chain_into
    from kltui.untrusted import console_markup
    from kltui.words.chain import progress_line
    from kltui.words.dumps import verdict_words

    n = len(sweep.runs)
    await chain_into(
        spec,
        sweep,
        view.run_view(n, n, sweep.base),
        say=lambda p: console.print(console_markup(progress_line(p)), soft_wrap=True),
        words=verdict_words,
    )


def _tui(args: argparse.Namespace, feed, console, live: bool = True) -> int:
    """The sweep (or a sweep folder read back) in the TUI; once it closes, the console's table
    and verdict, and the reports, as the headless command gives them."""
    from kltui.errors import EXIT_INTERRUPTED
    from kltui.tui.launch import run_sweep_app

    run_sweep_app(
        feed,
        theme=args.theme,
        screenshot_dir=args.screenshot_dir,
        read_only=getattr(args, "read_only", False),
    )
    if feed.sweep is None:  # closed before the sweep began
        return EXIT_INTERRUPTED
    return _finish(args, feed.sweep, console, live)


def _finish(args: argparse.Namespace, sweep, console, live: bool = True) -> int:
    """A sweep that ended: its result, its reports; a live one's manifest gets its verdict."""
    from kltui.outputs.ablation import finish

    return finish(
        console, sweep, live=live, md=args.md, junit=args.junit, json=args.json, html=args.html
    )


def replay(args: argparse.Namespace) -> int:
    """`kltui ablate --replay FOLDER` (and `kltui report FOLDER`): the sweep read back from its
    folder, printed and written as the live sweep was."""
    from kltui.outputs.ablation import replay_folder
    from kltui.run.sweep_manifest import load

    if use_tui(args):
        from kltui.console import make_console
        from kltui.tui.sweep_feed import SweepFeed

        return _tui(args, SweepFeed.replay(load(args.replay)), make_console(), live=False)
    sweep = load(args.replay)
    return replay_folder(sweep, md=args.md, junit=args.junit, json=args.json, html=args.html)
