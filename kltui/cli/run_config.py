"""The RunConfig of a run's parsed options (and of --config), checked, and where the run is
recorded. A flag whose value goes into its field as it is is copied by what run/settings.py
declares; the others have a hook here, named by the field they set."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kltui.cli.run_checks import (
    check_duplicate_servers,
    check_numbers,
    check_outputs,
    check_readable,
)
from kltui.errors import UsageError
from kltui.registry import BASELINE_HELPERS, REFERENCE_HELPERS
from kltui.run.settings import HF_FLAGS, SETTINGS

if TYPE_CHECKING:
    from kltui.run.config import RunConfig

# --hf-* dest -> its key in RunConfig.hf_baseline
HF_OPTIONS = {f.dest: key for key, f in HF_FLAGS.items()}


def build_config(args: argparse.Namespace) -> RunConfig:
    """The RunConfig of parsed run options (and of --config), checked."""
    from kltui.run.config import RunConfig, load_config_file

    check_numbers(args)
    check_outputs(args)
    cfg = RunConfig()
    if getattr(args, "config", None):
        cfg = load_config_file(args.config, cfg)
    _copy_flags(args, cfg)
    for hook in HOOKS.values():
        hook(args, cfg)
    _check_fleet(args, cfg)
    _check_servers(args, cfg)
    _check_vllm(args, cfg)
    _check_hf(args, cfg)
    _check_files(cfg)
    return cfg


def _copy_flags(args: argparse.Namespace, cfg: RunConfig) -> None:
    """Each given flag whose value is its field's, over the config file's."""
    for dest, name in SETTINGS.copied_flags().items():
        v = getattr(args, dest, None)
        if v is not None and v is not False:  # False: a store_true flag not given
            setattr(cfg, name, v)


def _servers(args: argparse.Namespace, cfg: RunConfig) -> None:
    if getattr(args, "server", None):
        cfg.servers = list(args.server)


def _baselines(args: argparse.Namespace, cfg: RunConfig) -> None:
    """--baseline (repeatable: one vLLM, one hf:) over the config file's."""
    from kltui.run.baselines import set_baseline

    if getattr(args, "baseline", None):
        cfg.baseline, cfg.hf_baseline = None, None
        for spec in args.baseline:
            set_baseline(cfg, spec, "--baseline")


def _hf_options(args: argparse.Namespace, cfg: RunConfig) -> None:
    """--hf-* into the hf: reference's settings, which must be there."""
    for opt, key in HF_OPTIONS.items():
        v = getattr(args, opt, None)
        if v is None:
            continue
        if cfg.hf_baseline is None:
            flag = "--" + opt.replace("_", "-")
            raise UsageError(f"{flag}: there is no hf: reference (--baseline hf:PATH)")
        cfg.hf_baseline[key] = v


def _prompt_cut(args: argparse.Namespace, cfg: RunConfig) -> None:
    if getattr(args, "max_prompt_tokens", None) is not None:
        cfg.max_prompt_tokens = args.max_prompt_tokens or None  # 0: no truncation
        cfg.prompt_cut_asked = True


def _separator_ids(args: argparse.Namespace, cfg: RunConfig) -> None:
    if getattr(args, "separator_ids", None) is not None:
        from kltui.run.tokenizer import parse_separator_ids

        cfg.separator_ids = parse_separator_ids(args.separator_ids)


def _helpers(args: argparse.Namespace, cfg: RunConfig) -> None:
    from kltui.run.config_nodes import check_helpers

    if getattr(args, "helpers", None) is not None:
        cfg.helpers = [h.strip() for h in args.helpers.split(",") if h.strip()]
        if not cfg.helpers:
            raise UsageError(f"--helpers {args.helpers!r}: name at least one helper")
        check_helpers(cfg.helpers, "--helpers")


def _stream(args: argparse.Namespace, cfg: RunConfig) -> None:
    if getattr(args, "no_stream", False):
        cfg.stream = False
    elif getattr(args, "stream", None):
        cfg.stream = True


def _router(args: argparse.Namespace, cfg: RunConfig) -> None:
    if getattr(args, "router", None):  # an empty --router leaves the file's
        cfg.router = args.router


def _batch_sizes(args: argparse.Namespace, cfg: RunConfig) -> None:
    spec = getattr(args, "batch_sizes", None)
    if spec is not None:
        try:
            sizes = [int(x) for x in spec.split(",") if x.strip()]
        except ValueError:
            sizes = []
        if not sizes or any(n < 1 for n in sizes):
            raise UsageError(f"--batch-sizes {spec!r}: give positive integers like 1,8,32")
        cfg.batch_sizes = sorted(set(sizes))


def _multiturn_suffixes(args: argparse.Namespace, cfg: RunConfig) -> None:
    spec = getattr(args, "multiturn_turn_suffixes", None)
    if spec is not None:
        try:
            lengths = [int(x) for x in spec.split(",") if x.strip()]
        except ValueError:
            lengths = []
        if not lengths or any(n < 1 for n in lengths):
            raise UsageError(
                f"--multiturn-turn-suffixes {spec!r}: give positive token counts like 512,256"
            )
        cfg.multiturn_turn_suffixes = lengths


def _multiturn_interleave(args: argparse.Namespace, cfg: RunConfig) -> None:
    if getattr(args, "multiturn_no_interleave", False):
        cfg.multiturn_interleave = False


def _explain(args: argparse.Namespace, cfg: RunConfig) -> None:
    if getattr(args, "explain", False):  # `kltui check` alone has --explain
        cfg.explain = True


# the flags that are not copied as they are, by the field they set, in the order they apply
# (--theme is the dashboard's own: only a config file's theme is recorded)
HOOKS: dict[str, Callable[[argparse.Namespace, RunConfig], None]] = {
    "servers": _servers,
    "baseline": _baselines,
    "hf_baseline": _hf_options,
    "max_prompt_tokens": _prompt_cut,
    "separator_ids": _separator_ids,
    "helpers": _helpers,
    "stream": _stream,
    "router": _router,
    "batch_sizes": _batch_sizes,
    "multiturn_turn_suffixes": _multiturn_suffixes,
    "multiturn_interleave": _multiturn_interleave,
    "explain": _explain,
}


def _where(args: argparse.Namespace, dest: str, key: str, flag: str) -> str:
    """How an error names a value: the flag when given, else the config file's key."""
    from_file = getattr(args, "config", None) and not getattr(args, dest, None)
    return f"{args.config}: {key}" if from_file else flag


def _check_fleet(args: argparse.Namespace, cfg: RunConfig) -> None:
    from kltui.engines.http import normalize_url

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
        cfg.router = normalize_url(cfg.router, _where(args, "router", "fleet.router", "--router"))


def _check_servers(args: argparse.Namespace, cfg: RunConfig) -> None:
    from kltui.engines.http import sglang_url

    from_cli = bool(getattr(args, "server", None))
    where = "--server" if from_cli else f"{getattr(args, 'config', None)}: servers"
    cfg.servers = [_say(*sglang_url(s, where)) for s in cfg.servers]
    check_duplicate_servers(cfg.servers, where)


def _say(url: str, note: str | None) -> str:
    if note:
        print(f"kltui: {note}", file=sys.stderr)
    return url


def _check_vllm(args: argparse.Namespace, cfg: RunConfig) -> None:
    """The vLLM baseline's URL and log, and the helpers that need it."""
    from kltui.engines.http import normalize_url

    if cfg.baseline:
        cfg.baseline = normalize_url(
            cfg.baseline, _where(args, "baseline", "baseline", "--baseline")
        )
        cfg.helpers += [h for h in BASELINE_HELPERS if h not in cfg.helpers]
        if cfg.baseline_log:
            where = _where(args, "baseline_log", "baseline_log", "--baseline-log")
            check_readable(cfg.baseline_log, where)
    elif needs := [h for h in cfg.helpers if h in BASELINE_HELPERS]:
        raise UsageError(f"the {needs[0]} helper needs --baseline HOST:PORT (a vLLM server)")


def _check_hf(args: argparse.Namespace, cfg: RunConfig) -> None:
    """The hf: reference's folder, and the helpers that need it."""
    if cfg.hf_baseline:
        from kltui.engines.hf import check_folder

        check_folder(
            cfg.hf_baseline["hf"], _where(args, "baseline", "baseline hf:", "--baseline hf:")
        )
        cfg.helpers += [h for h in REFERENCE_HELPERS if h not in cfg.helpers]
    elif needs := [h for h in cfg.helpers if h in REFERENCE_HELPERS]:
        raise UsageError(f"the {needs[0]} helper needs --baseline hf:PATH (a model folder)")


def _check_files(cfg: RunConfig) -> None:
    if cfg.prompts:
        from kltui.run.prompts import load_file

        load_file(cfg.prompts)  # a bad prompt file is exit 2 before any server is contacted
    if cfg.tokenizer:
        from kltui.run.tokenizer import resolve

        resolve(cfg.tokenizer)  # so is a tokenizer that is not there
    if cfg.model_config:
        from kltui.engines.geometry import Source
        from kltui.engines.model_config import ModelConfigError, load_model_config

        try:  # a bad model config names the file and field before any server is contacted
            load_model_config(cfg.model_config, Source.FLAG)
        except ModelConfigError as e:
            raise UsageError(f"--model-config {e}") from None


def record_path(args: argparse.Namespace) -> str | None:
    """Where the run is recorded, or None for --no-record."""
    if getattr(args, "no_record", False):
        return None
    if getattr(args, "record", None):
        return args.record
    from kltui.session.recording import default_recording_path
    from kltui.session.runs import keep_setting, prune
    from kltui.words.runs import auto_pruned

    keep = keep_setting()
    if keep is not None:
        # KLTUI_RUNS_KEEP: this run's recording will be the newest, so keep - 1 older ones stay
        removed, errors, _ = prune(keep=max(1, keep - 1), older_than_days=None)
        for err in errors:
            print(f"kltui: {err}", file=sys.stderr)
        if removed:
            print(auto_pruned(removed, keep), file=sys.stderr)
    return str(default_recording_path())
