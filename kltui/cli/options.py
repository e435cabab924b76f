"""What the run commands share: their options, in the help's order (each setting's flag is
declared in run/settings.py; the RunConfig built from them is cli/run_config.py's).
`kltui --help` imports this, so nothing heavy at import."""

from __future__ import annotations

import argparse

from kltui.argtypes import number

# re-exported under their importers' names (tests, scripts/readme_screenshots.py)
from kltui.cli.run_config import build_config as build_config
from kltui.cli.run_config import record_path as record_path
from kltui.registry import DEFAULT_MAX_NEW_TOKENS
from kltui.run.settings import SETTINGS
from kltui.run.settings_multiturn import MULTITURN_SETTINGS

SUBCOMMANDS = (
    "tui", "check", "ablate", "monitor", "demo", "replay", "runs", "report", "serve-reference", "web", "dumps",
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


# What a run measures by default, and the demo's own sizes (small enough for a laptop CPU).
RUN_SIZES = {"samples": 32, "max_new_tokens": DEFAULT_MAX_NEW_TOKENS, "max_prompt_tokens": 3000}
DEMO_SIZES = {"samples": 32, "max_new_tokens": 64, "max_prompt_tokens": 192}
# the reference tokenizer's lengths of the first 32 built-in prompts (what the demo sends):
# measured by tests/unit/cli/test_demo_help.py, which fails when the prompts change
DEMO_PROMPT_TOKENS = (16, 96)

# a run's options in the help's order (each declared in run/settings.py), around --config and
# the outputs, which are no setting
SERVER_SETTINGS = (
    "servers", "router", "fleet_concurrency", "fleet_require", "concurrency",
    "allow_different_models",
)  # fmt: skip
INPUT_SETTINGS = (
    "baseline", "hf_baseline", "baseline_log", "helpers", "samples", "max_new_tokens", "prompts",
    "max_prompt_tokens", "seed", "tokenizer", "separator_ids", "model_config", "temperature",
)  # fmt: skip
GATE_SETTINGS = ("preset", "tail_threshold", "top_k", "extras", "hit_rule")
REQUEST_SETTINGS = ("stream_interval", "flush_timeout", "request_timeout", "api_key")
STRESS_SETTINGS = ("stress", "batch_sizes")  # issue 32: state bugs that need load
MULTITURN_OPTIONS = tuple(MULTITURN_SETTINGS)  # issue 58: the multiturn helper's shape


def add_settings(
    p: argparse.ArgumentParser | argparse._ActionsContainer,
    names: tuple[str, ...],
    sizes: dict[str, int] = RUN_SIZES,
) -> None:
    """Add the flags of these settings (run/settings.py) to a parser or one of its groups."""
    for name in names:
        for f in SETTINGS[name].flags:
            f.add_to(p, sizes)


def add_run_options(
    p: argparse.ArgumentParser, *, servers: bool = True, sizes: dict[str, int] = RUN_SIZES
) -> None:
    """Add the options of a run (servers, sizes, thresholds, outputs) to a parser."""
    if servers:
        add_settings(p, SERVER_SETTINGS, sizes)
    add_settings(p, INPUT_SETTINGS, sizes)
    g = p.add_mutually_exclusive_group()
    add_settings(g, ("threshold",), sizes)
    g.add_argument("--config", metavar="FILE.yaml", help="YAML config with per (model, tp) gates")
    add_settings(p, GATE_SETTINGS, sizes)
    add_settings(p.add_mutually_exclusive_group(), ("stream",), sizes)
    add_settings(p, REQUEST_SETTINGS, sizes)
    p.add_argument(
        "--record",
        metavar="FILE",
        help="recording path (default: timestamped file "
        "in $KLTUI_RUNS_DIR or ~/.local/state/kltui/runs)",
    )
    p.add_argument("--no-record", action="store_true", help="do not record this run")
    p.add_argument("--json", metavar="FILE", help="write the JSON result")
    add_settings(p, STRESS_SETTINGS, sizes)
    add_settings(p.add_argument_group("multiturn"), MULTITURN_OPTIONS, sizes)


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
