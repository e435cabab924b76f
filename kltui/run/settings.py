"""Every RunConfig field declared once: its flag(s) and help, its config-file key with the types
and range it accepts, and its entry in the JSON report's `config`. The config file's checks
(run/config.py), build_config's plain mapping (cli/run_config.py) and the schema's `config`
entries derive from this table; tests/unit/run/test_settings.py checks that they agree."""

from __future__ import annotations

import math
from typing import Any

from kltui.argtypes import nonneg_int, number, pos_int
from kltui.metrics.presets import PRESETS
from kltui.registry import HELPERS
from kltui.run.settings_model import (
    INT_OR_NULL,
    STRING_OR_NULL,
    Setting,
    SettingTable,
    YamlKey,
    flag,
    nullable,
    ref,
)
from kltui.run.settings_multiturn import MULTITURN_SETTINGS
from kltui.run.settings_state import STATE_SETTINGS
from kltui.run.stress_levels import LEVELS

STRESS_LEVELS = tuple(LEVELS)  # --stress (run/stress_levels.py)
# readings/fleet_model.FLEET_REQUIRE (that module imports numpy; a test keeps them equal)
FLEET_REQUIRE = ("gate", "identical")
HF_DTYPES = ("auto", "float32", "bfloat16", "float16")


def prompt_cap(s: str) -> int:
    """--max-prompt-tokens: N > 0 cuts, 0 or `none` sends prompts uncut."""
    if s.strip().lower() in ("0", "none", "off"):
        return 0
    return pos_int(s)


def _positive(v: Any) -> bool:
    return v is None or v > 0


def _positive_finite(v: Any) -> bool:
    return math.isfinite(v) and v > 0


def _nonneg(v: Any) -> bool:
    return v >= 0


def _nonneg_finite(v: Any) -> bool:
    return math.isfinite(v) and v >= 0


def _str_list() -> dict[str, Any]:
    return nullable("array", items={"type": "string"})


_PATH = ((str,), "a file path")
_NUMBER = (int, float)
_BOOL = ((bool,), "true or false")

# the --hf-* options: one key each of the hf: reference's settings (hf_baseline)
HF_FLAGS = {
    "dtype": flag(
        "--hf-dtype",
        "the hf: reference's dtype (default: the server's reported dtype)",
        choices=HF_DTYPES,
    ),
    "device": flag(
        "--hf-device", "the hf: reference's device (cuda when available)", metavar="DEV"
    ),
    "attn_implementation": flag(
        "--hf-attn",
        "the hf: reference's attn_implementation (sdpa, eager, flash_attention_2, ...)",
        metavar="IMPL",
    ),
    "batch_size": flag(
        "--hf-batch-size",
        "sequences per reference forward (1: no padding, no batch effects; more pads to "
        "the longest of each batch, which changes the reference's own rounding)",
        type=pos_int,
        metavar="N",
    ),
}

_HF_SCHEMA = {
    "anyOf": [
        {"type": "null"},
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["hf"],
            "properties": {
                "hf": {"type": "string"},
                "dtype": {"enum": [*HF_DTYPES, None]},
                "device": ref(STRING_OR_NULL),
                "attn_implementation": ref(STRING_OR_NULL),
                "batch_size": nullable("integer", minimum=1),
            },
        },
    ]
}

_STRESS_HELP = (
    "run twice, quiet and then under bounded background traffic at the same server "
    "(shared prefixes, pool-filling prompts, aborts, streams, more requests than it runs "
    "at once), and compare per sample: bit for bit on a deterministic server, else the "
    "paired test. Levels: "
    # argparse %-formats help strings: the levels' "10% of the pool" must stay literal
    + "; ".join(f"{k}: {v.help}" for k, v in LEVELS.items()).replace("%", "%%")
)

SETTINGS = SettingTable(
    {
        "servers": Setting(
            _str_list(),
            YamlKey("servers"),
            (
                flag(
                    "--server",
                    "SGLang server (repeatable)",
                    action="append",
                    default=[],
                    metavar="HOST:PORT",
                ),
            ),
            copied=False,
        ),
        "baseline": Setting(
            ref(STRING_OR_NULL),
            YamlKey("baseline"),
            (
                flag(
                    "--baseline",
                    "a vLLM server for cross_engine, or hf:PATH, a local model folder with the "
                    "server's weights that Hugging Face transformers runs as the reference "
                    "(hf_reference, in a worker process; needs the [hf] extra); give both for the "
                    "three-way table",
                    action="append",
                    metavar="[vllm:]HOST:PORT|hf:PATH",
                ),
            ),
            copied=False,
        ),
        "hf_baseline": Setting(
            _HF_SCHEMA, YamlKey("baseline"), tuple(HF_FLAGS.values()), copied=False
        ),
        "baseline_log": Setting(
            ref(STRING_OR_NULL),
            YamlKey("baseline_log", *_PATH),
            (
                flag(
                    "--baseline-log",
                    "the vLLM baseline's startup log (`vllm serve ... 2>&1 | tee FILE`): the "
                    "attention backend and graph settings only the log names join the config "
                    "table (else 'unknown')",
                    metavar="FILE",
                ),
            ),
        ),
        "helpers": Setting(
            _str_list(),
            YamlKey("helpers"),
            (flag("--helpers", "comma list: " + ",".join(HELPERS), metavar="LIST"),),
            copied=False,
        ),
        "samples": Setting(
            nullable("integer"),
            YamlKey("samples", (int,), "a positive integer", _positive),
            (flag("--samples", "number of prompts ({samples})", sized=True, type=pos_int),),
        ),
        "max_new_tokens": Setting(
            nullable("integer"),
            YamlKey("max_new_tokens", (int,), "a positive integer", _positive),
            (
                flag(
                    "--max-new-tokens",
                    "tokens decoded per sample ({max_new_tokens})",
                    sized=True,
                    type=pos_int,
                ),
            ),
        ),
        "prompts": Setting(
            ref(STRING_OR_NULL),
            YamlKey("prompts", *_PATH),
            (flag("--prompts", ".txt, .jsonl or .json prompt file", metavar="FILE"),),
        ),
        "max_prompt_tokens": Setting(
            ref(INT_OR_NULL),
            YamlKey(
                "max_prompt_tokens", (int, type(None)), "a positive integer or null", _positive
            ),
            (
                flag(
                    "--max-prompt-tokens",
                    "seeded truncation to [0.5, 1.5] x N tokens ({max_prompt_tokens}); 0 or "
                    "none: no truncation. A .json of token-id lists (SGLang's input-id cache) is "
                    "sent uncut unless N is given",
                    sized=True,
                    type=prompt_cap,
                ),
            ),
            copied=False,
        ),
        "seed": Setting(
            nullable("integer"),
            YamlKey("seed", (int,), "an integer"),
            (
                flag(
                    "--seed",
                    "seed of the truncation lengths and of the --stress traffic (0)",
                    type=int,
                ),
            ),
        ),
        "temperature": Setting(
            nullable("number"),
            YamlKey("temperature", _NUMBER, "a number"),
            (flag("--temperature", "0 (default) or 1; others warn", type=number),),
        ),
        "tail_threshold": Setting(
            nullable("number"),
            YamlKey("tail_threshold", _NUMBER, "a positive number", _positive_finite),
            (flag("--tail-threshold", "tau for tail fractions (1e-3)", type=number),),
        ),
        "threshold": Setting(
            nullable("number"),
            YamlKey("threshold", _NUMBER, "a number >= 0 (0: bit-exact)", _nonneg_finite),
            (flag("--threshold", "avg_kl_div gate for every helper (0: bit-exact)", type=number),),
        ),
        "preset": Setting(
            ref(STRING_OR_NULL),
            YamlKey("preset", (str,), f"one of {', '.join(PRESETS)}", lambda v: v in PRESETS),
            (
                flag(
                    "--preset",
                    "thresholds: SGLang CI's per-model values, or bit-exact (1e-9)",
                    choices=tuple(PRESETS),
                ),
            ),
        ),
        "thresholds": Setting(
            nullable("array", items=ref("#/$defs/threshold_entry")), YamlKey("thresholds")
        ),
        "stream": Setting(
            nullable("boolean"),
            YamlKey("stream", (bool, type(None)), "true, false or null (stream only in the TUI)"),
            (
                flag(
                    "--stream",
                    "stream the scored decode (default: in the TUI only)",
                    action="store_true",
                    default=None,
                ),
                flag("--no-stream", "never stream /generate", action="store_true"),
            ),
            copied=False,
        ),
        "stream_interval": Setting(
            ref(INT_OR_NULL),
            YamlKey("stream_interval", (int, type(None)), "a positive integer or null", _positive),
            (
                flag(
                    "--stream-interval",
                    "tokens per streamed chunk (default: max-new-tokens / 16)",
                    type=pos_int,
                    metavar="N",
                ),
            ),
        ),
        "flush_timeout": Setting(
            nullable("number"),
            YamlKey("flush_timeout", _NUMBER, "seconds"),
            (flag("--flush-timeout", "seconds /flush_cache waits for idle", type=number),),
        ),
        "request_timeout": Setting(
            nullable("number"),
            YamlKey("request_timeout", _NUMBER, "seconds"),
            (flag("--request-timeout", "seconds to wait for a response", type=number),),
        ),
        "min_cache_hit_ratio": Setting(
            nullable("number"),
            YamlKey("min_cache_hit_ratio", _NUMBER, "a number in [0, 1]", lambda v: 0 <= v <= 1),
        ),
        "top_k": Setting(
            nullable("integer"),
            YamlKey("top_k", (int,), "an integer >= 0", _nonneg),
            (
                flag(
                    "--top-k",
                    "top-k alternatives per position in the drill-down, fetched by a separate "
                    "request (5; 0 = off)",
                    type=nonneg_int,
                ),
            ),
        ),
        "extras": Setting(
            ref(INT_OR_NULL),
            YamlKey("extras", (int,), "an integer >= 0", _nonneg),
            (
                flag(
                    "--extras",
                    "after the gate, fetch top-k and token text around the divergence of the N "
                    "worst samples per helper, in a separate request (3; 0 = off)",
                    type=nonneg_int,
                    metavar="N",
                ),
            ),
        ),
        "theme": Setting(
            ref(STRING_OR_NULL),
            YamlKey("theme", (str,), "a theme name"),
            (
                flag(
                    "--theme",
                    "kltui-dark (default), kltui-light, kltui-cb (colour-blind-safe heat scale)",
                ),
            ),
            copied=False,  # the dashboard takes --theme itself; only the file's is recorded
        ),
        "dump_dir": Setting(
            ref(STRING_OR_NULL),
            YamlKey("dump_dir", (str,), "a folder path"),
            (
                flag(
                    "--dump-dir",
                    "where the dumper drill-down (diagnosis, u) has the server write its dumps "
                    "(default: dumps/ in the runs folder)",
                    metavar="DIR",
                ),
            ),
        ),
        "keymap": Setting(
            nullable("object", additionalProperties={"type": "string"}), YamlKey("keymap")
        ),
        "yes_flush": Setting(
            None,  # how the TUI asks, not how the run measures
            YamlKey("yes_flush", *_BOOL),
            (
                flag(
                    "--yes-flush",
                    "flush every server's radix cache without asking first (the TUI asks once per "
                    "server that is not on loopback or is serving other requests; /flush_cache "
                    "affects every client)",
                    action="store_true",
                ),
            ),
        ),
        "explain": Setting(
            None,  # how the console words the diagnosis, not how the run measures
            YamlKey("explain", *_BOOL),
            (
                flag(
                    "--explain",
                    "print the statistics behind each diagnosis (the tests' p-values and what "
                    "they need); by default only the plain figures",
                    action="store_true",
                ),
            ),
            copied=False,  # `kltui check`'s own flag (cli/run_config.py's hook)
        ),
        "allow_different_models": Setting(
            nullable("boolean"),
            YamlKey("allow_different_models", *_BOOL),
            (
                flag(
                    "--allow-different-models",
                    "run and compare servers that report different models (refused otherwise)",
                    action="store_true",
                ),
            ),
        ),
        "api_key": Setting(
            None,  # never recorded: `api_key_set` says whether one is used
            flags=(flag("--api-key", "Bearer key (or env KLTUI_API_KEY); never recorded"),),
        ),
        "prompt_cut_asked": Setting(None),  # set with max_prompt_tokens (see RunConfig)
        "tokenizer": Setting(
            ref(STRING_OR_NULL),
            YamlKey(
                "tokenizer",
                (str,),
                "a tokenizer folder or a model name in the local Hugging Face cache",
            ),
            (
                flag(
                    "--tokenizer",
                    "local tokenizer (a folder with tokenizer.json, or a model name in the local HF "
                    "cache) for servers started with --skip-tokenizer-init: text prompts, "
                    "decode_cache_hit's separator and the drill-down's token text",
                    metavar="PATH|NAME",
                ),
            ),
        ),
        "separator_ids": Setting(
            ref("#/$defs/ids_or_null"),
            YamlKey("separator_ids"),
            (
                flag(
                    "--separator-ids",
                    "decode_cache_hit's turn-2 separator as token ids (e.g. 11, or 1,11 with a "
                    'BOS): what tokenizer.encode(",") gives for the model; needs no tokenizer',
                    metavar="IDS",
                ),
            ),
            copied=False,
        ),
        "router": Setting(
            ref(STRING_OR_NULL),
            YamlKey("fleet.router", (str,), "a HOST:PORT string"),
            (
                flag(
                    "--router",
                    "fleet mode: check every worker behind this SGLang router, each by its own URL",
                    metavar="HOST:PORT",
                ),
            ),
            copied=False,  # checked and normalized with the servers (cli/run_config.py)
        ),
        "fleet_concurrency": Setting(
            ref(INT_OR_NULL),
            YamlKey("fleet.concurrency", (int,), "a positive integer", _positive),
            (
                flag(
                    "--fleet-concurrency",
                    "fleet mode: workers checked at once (4)",
                    type=pos_int,
                    metavar="N",
                ),
            ),
        ),
        "fleet_require": Setting(
            {"enum": [*FLEET_REQUIRE, None]},
            YamlKey(
                "fleet.require",
                (str,),
                f"one of {', '.join(FLEET_REQUIRE)}",
                lambda v: v in FLEET_REQUIRE,
            ),
            (
                flag(
                    "--fleet-require",
                    "fleet mode: what fails the run: gate (each replica's helpers, the default) or "
                    "identical (also replicas not all bit-identical to each other, or not all "
                    "compared)",
                    choices=FLEET_REQUIRE,
                ),
            ),
        ),
        "concurrency": Setting(
            ref(INT_OR_NULL),
            YamlKey("concurrency", (int,), "a positive integer", _positive),
            (
                flag(
                    "--concurrency",
                    "servers (--server) measured at once; each server's helpers still run one "
                    "after the other (1)",
                    type=pos_int,
                    metavar="N",
                ),
            ),
        ),
        "stress": Setting(
            {"enum": [None, *STRESS_LEVELS]},
            YamlKey(
                "stress",
                (str, type(None)),
                f"one of {', '.join(STRESS_LEVELS)} or null",
                lambda v: v is None or v in STRESS_LEVELS,
            ),
            (flag("--stress", _STRESS_HELP, choices=STRESS_LEVELS, metavar="LEVEL"),),
        ),
        "stressed": Setting(nullable("boolean")),  # the second run of a --stress session
        "batch_sizes": Setting(
            nullable("array", items={"type": "integer", "minimum": 1}),
            flags=(
                flag(
                    "--batch-sizes",
                    "after the helpers, score the same prompts at each of these concurrencies "
                    "(e.g. 1,8,32) and report the smallest at which any token changes, per helper",
                    metavar="N,N,...",
                ),
            ),
            copied=False,
        ),
        "ablate": Setting(None, YamlKey("ablate")),  # how a sweep is laid out (config_ablate.py)
        **STATE_SETTINGS,
        **MULTITURN_SETTINGS,
    },
    # not a field: whether a key is used (--api-key or KLTUI_API_KEY), recorded in its stead
    record_also={"api_key_set": nullable("boolean")},
)
