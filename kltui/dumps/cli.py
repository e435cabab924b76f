"""`kltui dumps` (capture on a live server, then analyze) and `kltui dumps analyze A B`.

Exit codes: 0 decode and the fresh prefill are bit-identical at every aligned module; 1 a module
differs (named when its inputs are proven identical); 2 usage, no dumper hooks, misaligned rows or bad dump folders; 3 server
unreachable, HTTP error or busy (other requests ran while dumping); 130 interrupted."""

from __future__ import annotations

import asyncio
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from kltui.argtypes import pos_int
from kltui.errors import EXIT_SERVER, EXIT_USAGE, UsageError, passed_exit

if TYPE_CHECKING:
    from kltui.dumps.analyze import VerdictWords

EXIT_CODES = """exit codes: 0 decode and the fresh prefill bit-identical at every aligned module
(bit-equal, +0.0 and -0.0 counted equal); 1 a module's output differs (named when its inputs are
proven identical, else the reason it cannot be); 2 usage, no dumper hooks, misaligned rows or
bad dump folders; 3 server unreachable, HTTP error or busy; 130 interrupted."""


# argparse would print the optional `analyze` subcommand as if every call needed it
USAGE = """%(prog)s --server HOST:PORT --dump-dir DIR [--prompt-ids FILE | --prompt-tokens N]
                   [--new-tokens K] [--api-key KEY] [--request-timeout S] [--json FILE] [--full]
       %(prog)s analyze DIR_A DIR_B [--json FILE] [--full]"""


def add_parsers(sub, words: VerdictWords) -> None:
    """Add the `dumps` subcommand and its `analyze` to the argument parser; `words` says an
    analysis's verdict (`words/dumps.verdict_words`, given by the CLI above)."""
    d = sub.add_parser(
        "dumps",
        usage=USAGE,
        help="dumper drill-down: the first module where decode and prefill differ",
        description="Capture on a server launched with SGLang's dumper hooks, then analyze: "
        "decode K tokens, then one fresh prefill of prompt + those tokens; align decode step k "
        "with the prefill row at the same position and name the first module whose inputs are "
        "bit-identical and whose output differs.",
        epilog=EXIT_CODES,
    )
    d.add_argument("--server", metavar="HOST:PORT", help="SGLang server with dumper hooks")
    d.add_argument("--dump-dir", metavar="DIR", help="folder the server writes its dumps to")
    g = d.add_mutually_exclusive_group()
    g.add_argument("--prompt-ids", metavar="FILE", help="token ids (JSON list or whitespace)")
    g.add_argument("--prompt-tokens", type=pos_int, help="first N ids of the built-in prompts (32)")
    d.add_argument("--new-tokens", type=pos_int, default=8, help="decode steps K (8)")
    d.add_argument("--api-key", help="Bearer key (or env KLTUI_API_KEY); never recorded")
    d.add_argument(
        "--request-timeout", type=float, default=600.0, help="seconds to wait for a response (600)"
    )
    d.add_argument("--json", metavar="FILE", help="write the analysis as JSON")
    d.add_argument("--full", action="store_true", help="print every module, not only the tail")
    d.set_defaults(func=partial(cmd_dumps, words=words))
    dsub = d.add_subparsers(dest="dumps_command", metavar="analyze")
    a = dsub.add_parser(
        "analyze",
        prog="kltui dumps analyze",  # else argparse prefixes the capture form's usage
        help="analyze two dump folders (decode run, fresh prefill)",
        epilog=EXIT_CODES,
    )
    a.add_argument("dir_a", metavar="DIR_A", help="the decode run's folder (prompt prefill + K)")
    a.add_argument("dir_b", metavar="DIR_B", help="the fresh prefill's folder")
    a.add_argument("--json", metavar="FILE", help="write the analysis as JSON")
    a.add_argument("--full", action="store_true", help="print every module, not only the tail")
    a.set_defaults(func=partial(cmd_analyze, words=words))


def _finish(result: dict, args) -> int:
    """Writes --json, prints the module table; the exit code says whether they were identical."""
    from kltui.console import make_console
    from kltui.dumps.render import print_result
    from kltui.dumps.run import with_capture_keys

    result = with_capture_keys(result)
    if args.json:
        from kltui.session.jsonfile import write_json_document

        try:
            write_json_document(args.json, result, "dumps")
        except UsageError as e:
            print(f"kltui: error: {e}", file=sys.stderr)
            return EXIT_USAGE
    print_result(make_console(), result, full=args.full)
    return passed_exit(result["identical"] and result["prefill"]["identical"])


def cmd_analyze(args, words: VerdictWords) -> int:
    """`kltui dumps analyze A B`: the analysis of two saved dump folders."""
    from kltui.dumps.analyze import analyze

    return _finish(analyze(args.dir_a, args.dir_b, words), args)


def cmd_dumps(args, words: VerdictWords) -> int:
    """`kltui dumps`: capture decode and a fresh prefill on a live server, then analyze."""
    if not args.server or not args.dump_dir:
        raise UsageError(
            "dumps needs --server HOST:PORT and --dump-dir DIR (or: dumps analyze A B)"
        )
    from kltui.dumps.capture import HooksMissing, launch_settings
    from kltui.dumps.files import require_torch
    from kltui.dumps.passes import NotIdle
    from kltui.engines.errors import EngineError

    require_torch()  # before the server is touched: the analysis needs it
    dump_dir = Path(args.dump_dir).expanduser().resolve()
    prompt = None
    if args.prompt_ids:
        from kltui.dumps.capture import read_prompt_ids

        prompt = read_prompt_ids(args.prompt_ids)
    try:
        result = asyncio.run(_run(args, dump_dir, prompt, words))
    except HooksMissing as e:
        print(f"kltui: error: {e}\n{launch_settings(str(dump_dir))}", file=sys.stderr)
        return EXIT_USAGE
    except NotIdle as e:
        print(f"kltui: error: the server was not idle while dumping: {e}", file=sys.stderr)
        return EXIT_SERVER
    except EngineError as e:
        print(f"kltui: error: {e}", file=sys.stderr)
        return EXIT_SERVER
    return _finish(result, args)


async def _run(args, dump_dir: Path, prompt: list[int] | None, words: VerdictWords) -> dict:
    from kltui.dumps.run import client_for, drill_down

    async with client_for(args.server, args.api_key, args.request_timeout) as client:
        return await drill_down(
            client,
            args.server,
            dump_dir,
            prompt=prompt,
            prompt_tokens=args.prompt_tokens or 32,
            new_tokens=args.new_tokens,
            words=words,
        )
