"""What the run commands share: option definitions, their types, and the RunConfig and
recording path built from them. `kltui --help` imports this, so nothing heavy at import."""

from __future__ import annotations

import argparse
import math
import sys

from kltui.argtypes import nonneg_int, number, pos_int
from kltui.cli.report import REPORT_FORMATS
from kltui.errors import UsageError
from kltui.registry import (
    BASELINE_HELPERS,
    DEFAULT_MAX_NEW_TOKENS,
    HELPERS,
    REFERENCE_HELPERS,
)

SUBCOMMANDS = (
    "tui", "check", "ablate", "demo", "replay", "runs", "report", "serve-reference", "web", "dumps",
    "probe-ops",
)  # fmt: skip

DESCRIPTION = """Live numerical alignment for SGLang (and vLLM as a baseline).

  kltui --server localhost:30000            open the live dashboard
  kltui check --server localhost:30000      headless gate for CI (exit 0 pass, 1 fail)
  kltui ablate --launch CMD --vary K=A,B    which setting causes a divergence
  kltui demo                                run everything on the embedded reference server
"""

EXIT_CODES = """exit codes: 0 all helpers pass; 1 a threshold is exceeded (or a helper is vacuous or
short of cache hits); 2 usage, config or input-file error; 3 server or protocol error;
130 interrupted (Ctrl-C / SIGTERM; what was measured is kept)."""


YES_FLUSH_HELP = (
    "flush every server's radix cache without asking first (the TUI asks once per server "
    "that is not on loopback or is serving other requests; /flush_cache affects every client)"
)


def _prompt_cap(s: str) -> int:
    """--max-prompt-tokens: N > 0 cuts, 0 or `none` sends prompts uncut."""
    if s.strip().lower() in ("0", "none", "off"):
        return 0
    return pos_int(s)


# What a run measures by default, and the demo's own sizes (small enough for a laptop CPU).
RUN_SIZES = {"samples": 32, "max_new_tokens": DEFAULT_MAX_NEW_TOKENS, "max_prompt_tokens": 3000}
DEMO_SIZES = {"samples": 32, "max_new_tokens": 64, "max_prompt_tokens": 192}
# the reference tokenizer's lengths of the first 32 built-in prompts (what the demo sends):
# measured by tests/unit/test_demo_help.py, which fails when the prompts change
DEMO_PROMPT_TOKENS = (16, 96)
THEME_HELP = "kltui-dark (default), kltui-light, kltui-cb (colour-blind-safe heat scale)"


def add_run_options(
    p: argparse.ArgumentParser, *, servers: bool = True, sizes: dict[str, int] = RUN_SIZES
) -> None:
    """Add the options of a run (servers, sizes, thresholds, outputs) to a parser."""
    if servers:
        p.add_argument(
            "--server",
            action="append",
            default=[],
            metavar="HOST:PORT",
            help="SGLang server (repeatable)",
        )
        p.add_argument(
            "--router",
            metavar="HOST:PORT",
            help="fleet mode: check every worker behind this SGLang router, each by its own URL",
        )
        p.add_argument(
            "--fleet-concurrency",
            type=pos_int,
            metavar="N",
            help="fleet mode: workers checked at once (4)",
        )
        p.add_argument(
            "--fleet-require",
            choices=("gate", "identical"),
            help="fleet mode: what fails the run: gate (each replica's helpers, the default) or "
            "identical (also replicas not all bit-identical to each other, or not all compared)",
        )
        p.add_argument(
            "--concurrency",
            type=pos_int,
            metavar="N",
            help="servers (--server) measured at once; each server's helpers still run one "
            "after the other (1)",
        )
        p.add_argument(
            "--allow-different-models",
            action="store_true",
            help="run and compare servers that report different models (refused otherwise)",
        )
    p.add_argument(
        "--baseline",
        action="append",
        metavar="[vllm:]HOST:PORT|hf:PATH",
        help="a vLLM server for cross_engine, or hf:PATH, a local model folder with the "
        "server's weights that Hugging Face transformers runs as the reference (hf_reference, "
        "in a worker process; needs the [hf] extra); give both for the three-way table",
    )
    p.add_argument(
        "--hf-dtype",
        choices=("auto", "float32", "bfloat16", "float16"),
        help="the hf: reference's dtype (default: the server's reported dtype)",
    )
    p.add_argument(
        "--hf-device", metavar="DEV", help="the hf: reference's device (cuda when available)"
    )
    p.add_argument(
        "--hf-attn",
        metavar="IMPL",
        help="the hf: reference's attn_implementation (sdpa, eager, flash_attention_2, ...)",
    )
    p.add_argument(
        "--hf-batch-size",
        type=pos_int,
        metavar="N",
        help="sequences per reference forward (1: no padding, no batch effects; more pads to "
        "the longest of each batch, which changes the reference's own rounding)",
    )
    p.add_argument(
        "--baseline-log",
        metavar="FILE",
        help="the vLLM baseline's startup log (`vllm serve ... 2>&1 | tee FILE`): the attention "
        "backend and graph settings only the log names join the config table (else 'unknown')",
    )
    p.add_argument(
        "--helpers",
        metavar="LIST",
        help="comma list: " + ",".join(HELPERS),
    )
    p.add_argument("--samples", type=pos_int, help=f"number of prompts ({sizes['samples']})")
    p.add_argument(
        "--max-new-tokens",
        type=pos_int,
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
    p.add_argument(
        "--seed", type=int, help="seed of the truncation lengths and of the --stress traffic (0)"
    )
    p.add_argument(
        "--tokenizer",
        metavar="PATH|NAME",
        help="local tokenizer (a folder with tokenizer.json, or a model name in the local HF "
        "cache) for servers started with --skip-tokenizer-init: text prompts, decode_cache_hit's "
        "separator and the drill-down's token text",
    )
    p.add_argument(
        "--separator-ids",
        metavar="IDS",
        help="decode_cache_hit's turn-2 separator as token ids (e.g. 11, or 1,11 with a BOS): "
        'what tokenizer.encode(",") gives for the model; needs no tokenizer',
    )
    p.add_argument("--temperature", type=number, help="0 (default) or 1; others warn")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--threshold", type=number, help="avg_kl_div gate for every helper")
    g.add_argument("--config", metavar="FILE.yaml", help="YAML config with per (model, tp) gates")
    p.add_argument(
        "--preset",
        choices=("sglang-ci", "deterministic"),
        help="thresholds: SGLang CI's per-model values, or bit-exact (1e-9)",
    )
    p.add_argument("--tail-threshold", type=number, help="tau for tail fractions (1e-3)")
    p.add_argument(
        "--top-k",
        type=nonneg_int,
        help="top-k alternatives per position in the drill-down, fetched by a separate "
        "request (5; 0 = off)",
    )
    p.add_argument(
        "--extras",
        type=nonneg_int,
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
        type=pos_int,
        metavar="N",
        help="tokens per streamed chunk (default: max-new-tokens / 16)",
    )
    p.add_argument("--flush-timeout", type=number, help="seconds /flush_cache waits for idle")
    p.add_argument("--request-timeout", type=number, help="seconds to wait for a response")
    p.add_argument("--api-key", help="Bearer key (or env KLTUI_API_KEY); never recorded")
    p.add_argument(
        "--record",
        metavar="FILE",
        help="recording path (default: timestamped file "
        "in $KLTUI_RUNS_DIR or ~/.local/state/kltui/runs)",
    )
    p.add_argument("--no-record", action="store_true", help="do not record this run")
    p.add_argument("--json", metavar="FILE", help="write the JSON result")
    add_stress_options(p)


def add_stress_options(p: argparse.ArgumentParser) -> None:
    """--stress LEVEL and --batch-sizes (issue 32): state bugs that need load."""
    from kltui.run.stress_levels import LEVELS

    p.add_argument(
        "--stress",
        choices=tuple(LEVELS),
        metavar="LEVEL",
        help="run twice, quiet and then under bounded background traffic at the same server "
        "(shared prefixes, pool-filling prompts, aborts, streams, more requests than it runs "
        "at once), and compare per sample: bit for bit on a deterministic server, else the "
        "paired test. Levels: "
        # argparse %-formats help strings: the levels' "10% of the pool" must stay literal
        + "; ".join(f"{k}: {v.help}" for k, v in LEVELS.items()).replace("%", "%%"),
    )
    p.add_argument(
        "--batch-sizes",
        metavar="N,N,...",
        help="after the helpers, score the same prompts at each of these concurrencies (e.g. "
        "1,8,32) and report the smallest at which any token changes, per helper",
    )


def apply_stress_options(args: argparse.Namespace, cfg) -> None:
    """--stress and --batch-sizes into the RunConfig, checked."""
    if getattr(args, "stress", None):
        cfg.stress = args.stress
    spec = getattr(args, "batch_sizes", None)
    if spec is not None:
        try:
            sizes = [int(x) for x in spec.split(",") if x.strip()]
        except ValueError:
            sizes = []
        if not sizes or any(n < 1 for n in sizes):
            raise UsageError(f"--batch-sizes {spec!r}: give positive integers like 1,8,32")
        cfg.batch_sizes = sorted(set(sizes))


def check_numbers(args: argparse.Namespace) -> None:
    """Gates that would make every verdict meaningless (NaN never compares, a gate <= 0 can
    never pass) are refused before anything runs."""
    for flag in ("threshold", "tail_threshold"):
        v = getattr(args, flag, None)
        if v is not None and not (math.isfinite(v) and v > 0):
            name = "--" + flag.replace("_", "-")
            raise UsageError(f"{name} {v!r}: must be a positive finite number")


OUTPUT_OPTIONS = ("json", *REPORT_FORMATS, "record")


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path's folder must exist and take a new file now, not after the run."""
    import tempfile
    from pathlib import Path

    for name in OUTPUT_OPTIONS:
        path = getattr(args, name, None)
        if not isinstance(path, str) or path == "-":
            continue
        target = Path(path)
        folder = target.resolve().parent
        why = None
        if target.is_dir():
            why = "is a directory"
        elif not folder.is_dir():
            why = f"no such directory {str(folder)!r}"
        else:
            try:  # os.access says yes to root on a read-only mount: try a real file
                with tempfile.NamedTemporaryFile(dir=folder, prefix=".kltui-probe-"):
                    pass
            except OSError as e:
                why = f"cannot write in {str(folder)!r} ({e.strerror or e})"
        if why:
            raise UsageError(f"--{name} {path}: {why}")


def check_duplicate_servers(servers: list[str], where: str) -> None:
    """Two names for one server (localhost:P and 127.0.0.1:P, or one URL twice) would run
    twice, the second overwriting the first: refused."""
    import socket
    from urllib.parse import urlsplit

    seen: dict[tuple, str] = {}
    for url in servers:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = (parts.hostname or "").lower()
        keys = {(host, port)}
        if len(servers) > 1:
            try:
                infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
                keys |= {(str(info[4][0]), port) for info in infos}
            except (OSError, UnicodeError):
                pass  # unresolvable here: compared by name; connecting will say more
        for key in keys:
            if key in seen and seen[key] != url:
                raise UsageError(
                    f"{where}: {seen[key]} and {url} are the same server ({key[0]} port "
                    f"{key[1]}); name each server once"
                )
            if key in seen:
                raise UsageError(f"{where}: {url} is named twice; name each server once")
        for key in keys:
            seen[key] = url


def _readable(path: str, where: str) -> None:
    """A log the user named is read, or refused now: unread, its settings would say 'unknown'."""
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise UsageError(f"{where}: cannot read {path!r} ({e.strerror or e})") from None


def _say(url: str, note: str | None) -> str:
    if note:
        print(f"kltui: {note}", file=sys.stderr)
    return url


HF_OPTIONS = {
    "hf_dtype": "dtype",
    "hf_device": "device",
    "hf_attn": "attn_implementation",
    "hf_batch_size": "batch_size",
}


def _baselines(args: argparse.Namespace, cfg) -> None:
    """--baseline (repeatable: one vLLM, one hf:) over the config file's, then --hf-*."""
    from kltui.run.config import set_baseline

    if getattr(args, "baseline", None):
        cfg.baseline, cfg.hf_baseline = None, None
        for spec in args.baseline:
            set_baseline(cfg, spec, "--baseline")
    for opt, key in HF_OPTIONS.items():
        v = getattr(args, opt, None)
        if v is None:
            continue
        if cfg.hf_baseline is None:
            flag = "--" + opt.replace("_", "-")
            raise UsageError(f"{flag}: there is no hf: reference (--baseline hf:PATH)")
        cfg.hf_baseline[key] = v


def build_config(args: argparse.Namespace):
    """The RunConfig of parsed run options (and of --config), checked."""
    from kltui.engines.http import normalize_url, sglang_url
    from kltui.run.config import RunConfig, check_helpers, load_config_file

    check_numbers(args)
    check_outputs(args)
    cfg = RunConfig()
    if getattr(args, "config", None):
        cfg = load_config_file(args.config, cfg)
    if getattr(args, "server", None):
        cfg.servers = list(args.server)
    _baselines(args, cfg)
    mapping = {
        "baseline_log": "baseline_log",
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
        "tokenizer": "tokenizer",
    }
    for arg, attr in mapping.items():
        v = getattr(args, arg, None)
        if v is not None:
            setattr(cfg, attr, v)
    if getattr(args, "max_prompt_tokens", None) is not None:
        cfg.max_prompt_tokens = args.max_prompt_tokens or None  # 0: no truncation
        cfg.prompt_cut_asked = True
    if getattr(args, "separator_ids", None) is not None:
        from kltui.run.tokenizer import parse_separator_ids

        cfg.separator_ids = parse_separator_ids(args.separator_ids)
    if getattr(args, "helpers", None) is not None:
        cfg.helpers = [h.strip() for h in args.helpers.split(",") if h.strip()]
        if not cfg.helpers:
            raise UsageError(f"--helpers {args.helpers!r}: name at least one helper")
        check_helpers(cfg.helpers, "--helpers")
    if getattr(args, "no_stream", False):
        cfg.stream = False
    elif getattr(args, "stream", None):
        cfg.stream = True
    if getattr(args, "yes_flush", False):
        cfg.yes_flush = True
    if getattr(args, "allow_different_models", False):
        cfg.allow_different_models = True
    if getattr(args, "router", None):
        cfg.router = args.router
    if getattr(args, "fleet_concurrency", None) is not None:
        cfg.fleet_concurrency = args.fleet_concurrency
    if getattr(args, "fleet_require", None) is not None:
        cfg.fleet_require = args.fleet_require
    if getattr(args, "concurrency", None) is not None:
        cfg.concurrency = args.concurrency
    apply_stress_options(args, cfg)
    if cfg.fleet_require != "gate" and not cfg.router:
        raise UsageError(
            f"--fleet-require {cfg.fleet_require} needs a fleet: give --router HOST:PORT "
            "(several --server are compared pair by pair, with no such gate)"
        )
    if cfg.router:
        if getattr(args, "server", None) or cfg.servers:
            raise UsageError(
                "give --server (servers) or --router (fleet mode: the router's workers), not both"
            )
        from_file = getattr(args, "config", None) and not getattr(args, "router", None)
        cfg.router = normalize_url(
            cfg.router, f"{args.config}: fleet.router" if from_file else "--router"
        )
    from_cli = bool(getattr(args, "server", None))
    where = "--server" if from_cli else f"{getattr(args, 'config', None)}: servers"
    cfg.servers = [_say(*sglang_url(s, where)) for s in cfg.servers]
    check_duplicate_servers(cfg.servers, where)
    if cfg.baseline:
        from_file = getattr(args, "config", None) and not getattr(args, "baseline", None)
        cfg.baseline = normalize_url(
            cfg.baseline, f"{args.config}: baseline" if from_file else "--baseline"
        )
        cfg.helpers += [h for h in BASELINE_HELPERS if h not in cfg.helpers]
        if cfg.baseline_log:
            from_file = getattr(args, "config", None) and not getattr(args, "baseline_log", None)
            _readable(
                cfg.baseline_log, f"{args.config}: baseline_log" if from_file else "--baseline-log"
            )
    elif needs := [h for h in cfg.helpers if h in BASELINE_HELPERS]:
        raise UsageError(f"the {needs[0]} helper needs --baseline HOST:PORT (a vLLM server)")
    if cfg.hf_baseline:
        from kltui.engines.hf import check_folder

        from_file = getattr(args, "config", None) and not getattr(args, "baseline", None)
        check_folder(cfg.hf_baseline["hf"], f"{args.config}: baseline hf:" if from_file else
                     "--baseline hf:")  # fmt: skip
        cfg.helpers += [h for h in REFERENCE_HELPERS if h not in cfg.helpers]
    elif needs := [h for h in cfg.helpers if h in REFERENCE_HELPERS]:
        raise UsageError(f"the {needs[0]} helper needs --baseline hf:PATH (a model folder)")
    if cfg.prompts:
        from kltui.run.prompts import load_file

        load_file(cfg.prompts)  # a bad prompt file is exit 2 before any server is contacted
    if cfg.tokenizer:
        from kltui.run.tokenizer import resolve

        resolve(cfg.tokenizer)  # so is a tokenizer that is not there
    return cfg


def record_path(args: argparse.Namespace) -> str | None:
    """Where the run is recorded, or None for --no-record."""
    if getattr(args, "no_record", False):
        return None
    if getattr(args, "record", None):
        return args.record
    from kltui.session.recording import default_recording_path
    from kltui.session.runs import keep_setting, prune, removed_counts

    keep = keep_setting()
    if keep is not None:
        # KLTUI_RUNS_KEEP: this run's recording will be the newest, so keep - 1 older ones stay
        removed, errors, _ = prune(keep=max(1, keep - 1), older_than_days=None)
        for err in errors:
            print(f"kltui: {err}", file=sys.stderr)
        if removed:
            print(
                f"kltui: removed {removed_counts(removed, old=True)} (KLTUI_RUNS_KEEP={keep})",
                file=sys.stderr,
            )
    return str(default_recording_path())


def days_arg(s: str) -> float:
    """A number of days for --older-than (argparse type)."""
    v = number(s.removesuffix("d"))
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {s!r}")
    return v


def add_read_only(p: argparse.ArgumentParser) -> None:
    """Add --read-only to a parser."""
    p.add_argument(
        "--read-only",
        action="store_true",
        help="keys that act on servers or files (r re-run, s screenshot) are off (`kltui web`)",
    )
