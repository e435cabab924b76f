"""RunConfig, YAML config files (validated, with file:line errors) and threshold resolution."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from kltui.errors import FileLineError, UsageError
from kltui.metrics.k3 import DEFAULT_TAIL_THRESHOLD
from kltui.metrics.presets import (
    DEFAULT_KL_DIV,
    DETERMINISTIC_KL_DIV,
    PRESETS,
    ThresholdSource,
)
from kltui.readings.fleet_model import DEFAULT_FLEET_REQUIRE, FLEET_REQUIRE
from kltui.registry import DEFAULT_HELPERS, DEFAULT_MAX_NEW_TOKENS, HELPERS
from kltui.run.prompts import DEFAULT_MAX_PROMPT_TOKENS, DEFAULT_SEED
from kltui.run.stress_levels import LEVELS as STRESS_LEVEL_TABLE

STREAM_CHUNKS = 16
DEFAULT_FLEET_CONCURRENCY = 4
STRESS_LEVELS = tuple(STRESS_LEVEL_TABLE)  # --stress (run/stress_levels.py)


class ConfigError(FileLineError):
    """A config file that cannot be used, named with its line."""


@dataclass
class ThresholdEntry:
    """One per-model threshold entry, as SGLang's ThresholdEntry."""

    model: str
    tp: int | None = None
    kl_div: float | None = None
    kl_div_prefill: float | None = None
    kl_div_decode: float | None = None
    tail_threshold: float | None = None

    def matches(self, model: str | None, tp: int | None) -> bool:
        """Whether this entry applies to a server's model and tp size."""
        if self.tp is not None and tp is not None and self.tp != tp:
            return False
        if self.model == "*":
            return True
        if not model:
            return False
        # a server reports a local path or an HF id; compare the tail too
        return model == self.model or model.rstrip("/").endswith("/" + self.model.split("/")[-1])

    def for_helper(self, helper: str) -> float | None:
        """This entry's threshold for a helper (its own field, else kl_div)."""
        spec = HELPERS.get(helper)
        specific = getattr(self, spec.threshold_field if spec else "kl_div")
        return specific if specific is not None else self.kl_div  # SGLang's `or` fallback


@dataclass
class RunConfig:
    """Everything one run is asked to do, from the options and the config file."""

    servers: list[str] = field(default_factory=list)
    baseline: str | None = None  # the vLLM baseline's URL (--baseline [vllm:]HOST:PORT)
    # the Hugging Face transformers reference (--baseline hf:PATH): HFSettings.to_dict()
    hf_baseline: dict | None = None
    baseline_log: str | None = None  # the baseline's startup log, for settings only it names
    helpers: list[str] = field(default_factory=lambda: list(DEFAULT_HELPERS))
    samples: int = 32
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    prompts: str | None = None
    max_prompt_tokens: int | None = DEFAULT_MAX_PROMPT_TOKENS
    seed: int = DEFAULT_SEED
    temperature: float = 0.0
    tail_threshold: float = DEFAULT_TAIL_THRESHOLD
    threshold: float | None = None
    preset: str | None = None
    thresholds: list[ThresholdEntry] = field(default_factory=list)
    # None: stream where something is shown live (the TUI), not in `kltui check`
    stream: bool | None = None
    # tokens per streamed chunk; None: max_new_tokens / STREAM_CHUNKS (see stream_interval_for)
    stream_interval: int | None = None
    flush_timeout: float = 30.0
    request_timeout: float = 600.0
    min_cache_hit_ratio: float = 0.5
    top_k: int = 5
    # worst samples per helper whose tail gets top-k + token text from a follow-up request
    extras: int = 3
    theme: str | None = None
    dump_dir: str | None = None  # where the TUI's dumper drill-down has the server write
    keymap: dict[str, str] = field(default_factory=dict)
    # the TUI flushes without asking first, even a shared server (`kltui check` never asks)
    yes_flush: bool = False
    # run and compare servers whose model_path or weight version differ (refused otherwise)
    allow_different_models: bool = False
    api_key: str | None = field(default=None, repr=False)
    # max_prompt_tokens came from the command line or a config file, not the default: only then
    # are pre-cut token-id files (SGLang's input-id cache) cut again
    prompt_cut_asked: bool = field(default=False, repr=False)
    # for servers without a tokenizer (--skip-tokenizer-init): a local tokenizer (folder or a
    # name in the local HF cache) and/or decode_cache_hit's separator "," as ids
    tokenizer: str | None = None
    separator_ids: list[int] | None = None
    # fleet mode: the SGLang router whose workers are checked one by one (by their own URLs),
    # and how many of them run at once
    router: str | None = None
    fleet_concurrency: int = DEFAULT_FLEET_CONCURRENCY
    # what fails a fleet run: "gate" (each replica's helpers, as for --server) or "identical"
    # (also replicas that are not all bit-identical, or not all compared)
    fleet_require: str = DEFAULT_FLEET_REQUIRE
    # servers measured at once in one run (1: one after the other); each server's helpers still
    # run one after the other, and a server that fails does not stop the others
    concurrency: int = 1
    # --stress LEVEL (run/stress.py): a session of two runs, quiet then under background
    # traffic, compared per sample (readings/stress.py); `stressed` marks the second
    stress: str | None = None
    stressed: bool = False
    # --batch-sizes 1,8,32 (run/batch_probe.py): the same prompts scored at each concurrency
    batch_sizes: list[int] | None = None
    # `kltui ablate`'s section of a config file; how a sweep is laid out, not what one run
    # measures, so it is never recorded
    ablate: AblateSection | None = field(default=None, repr=False)

    def server_api_key(self) -> str | None:
        """The SGLang servers' (and router's) key: --api-key, else KLTUI_API_KEY; never sent to
        the vLLM baseline."""
        from kltui.engines.http import resolve_api_key  # here: `kltui --help` skips httpx

        return resolve_api_key(self.api_key)

    def baseline_api_key(self) -> str | None:
        """The vLLM baseline's own key (KLTUI_BASELINE_API_KEY), never the SGLang servers' key."""
        from kltui.engines.http import resolve_baseline_api_key

        return resolve_baseline_api_key()

    def streams(self, live_view: bool) -> bool:
        """Whether decodes are streamed (by default only where a view shows them live)."""
        return live_view if self.stream is None else self.stream

    def stream_interval_for(self) -> int:
        """Tokens per chunk of a streamed decode.

        SGLang's default stream resends every logprob so far with every token, so a 512-token
        decode costs the server and the client O(n^2) entries per sample; STREAM_CHUNKS chunks
        per sample keep the live heatmap moving at a small, bounded cost.
        """
        if self.stream_interval:
            return self.stream_interval
        return max(1, -(-self.max_new_tokens // STREAM_CHUNKS))

    @classmethod
    def record_keys(cls) -> tuple[str, ...]:
        """The keys of `to_record()`, in its order (the JSON report's `config`)."""
        skip = ("api_key", "prompt_cut_asked", "yes_flush", "ablate")
        return (*(f.name for f in fields(cls) if f.name not in skip), "api_key_set")

    def to_record(self) -> dict:
        """What goes into recordings and reports: everything except the API key."""
        d = asdict(self)
        d.pop("api_key", None)
        d.pop("prompt_cut_asked", None)
        d.pop("yes_flush", None)  # how the TUI asks, not how the run measures
        d.pop("ablate", None)
        # a key from KLTUI_API_KEY is used as well: say so
        d["api_key_set"] = bool(self.server_api_key())
        return d


# field name -> (accepted types, description for errors)
_SCALARS: dict[str, tuple[tuple[type, ...], str]] = {
    "baseline_log": ((str,), "a file path"),
    "samples": ((int,), "a positive integer"),
    "max_new_tokens": ((int,), "a positive integer"),
    "prompts": ((str,), "a file path"),
    "max_prompt_tokens": ((int, type(None)), "a positive integer or null"),
    "seed": ((int,), "an integer"),
    "temperature": ((int, float), "a number"),
    "tail_threshold": ((int, float), "a positive number"),
    "threshold": ((int, float), "a positive number"),
    "preset": ((str,), f"one of {', '.join(PRESETS)}"),
    "stream": ((bool, type(None)), "true, false or null (stream only in the TUI)"),
    "stream_interval": ((int, type(None)), "a positive integer or null"),
    "extras": ((int,), "an integer >= 0"),
    "flush_timeout": ((int, float), "seconds"),
    "request_timeout": ((int, float), "seconds"),
    "min_cache_hit_ratio": ((int, float), "a number in [0, 1]"),
    "top_k": ((int,), "an integer >= 0"),
    "theme": ((str,), "a theme name"),
    "dump_dir": ((str,), "a folder path"),
    "yes_flush": ((bool,), "true or false"),
    "tokenizer": ((str,), "a tokenizer folder or a model name in the local Hugging Face cache"),
    "allow_different_models": ((bool,), "true or false"),
    "concurrency": ((int,), "a positive integer"),
    "stress": ((str, type(None)), f"one of {', '.join(STRESS_LEVELS)} or null"),
}
_LISTS = {"servers", "helpers", "thresholds", "separator_ids"}
_MAPS = {"keymap", "fleet", "ablate", "baseline"}
_FLEET_KEYS = {
    "router": "a HOST:PORT string",
    "concurrency": "a positive integer",
    "require": f"one of {', '.join(FLEET_REQUIRE)}",
}
_TOP_KEYS = set(_SCALARS) | _LISTS | _MAPS
_ENTRY_KEYS = {f for f in ThresholdEntry.__dataclass_fields__}


def _did_you_mean(key: str, options: set[str]) -> str:
    close = difflib.get_close_matches(key, sorted(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _known_keys(
    path: str, node: yaml.Node, allowed: set[str], where: str = ""
) -> Iterator[tuple[str, yaml.Node]]:
    """Each key of a YAML mapping with its value's node; an unknown key is an error."""
    for k_node, v_node in node.value:
        k = k_node.value
        if k not in allowed:
            raise ConfigError(
                path, f"unknown key '{k}'{where}{_did_you_mean(k, allowed)}", _line(k_node)
            )
        yield k, v_node


def _check_type(path: str, key: str, value: Any, node: yaml.Node, types, desc: str) -> None:
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(path, f"'{key}' must be {desc}, got {value!r}", _line(node))
    if not isinstance(value, types):
        raise ConfigError(path, f"'{key}' must be {desc}, got {value!r}", _line(node))


def load_config_file(path_str: str, base: RunConfig | None = None) -> RunConfig:
    """Reads a YAML config into a RunConfig; every error names the file and line."""
    path = Path(path_str)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path_str, "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(path_str, f"cannot read as UTF-8 text ({e})") from None
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(
            path_str, f"invalid YAML: {problem}", mark.line + 1 if mark else None
        ) from None
    cfg = base or RunConfig()
    if root is None:
        return cfg
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(path_str, "top level must be a mapping of settings", _line(root))
    data = yaml.safe_load(text)
    for key, val_node in _known_keys(path_str, root, _TOP_KEYS):
        value = data[key]
        if key in _SCALARS:
            types, desc = _SCALARS[key]
            _check_type(path_str, key, value, val_node, types, desc)
            _check_range(path_str, key, value, val_node)
            setattr(cfg, key, float(value) if float in types and value is not None else value)
            if key == "max_prompt_tokens":
                cfg.prompt_cut_asked = True
        elif key in ("servers", "helpers"):
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(path_str, f"'{key}' must be a list of strings", _line(val_node))
            if key == "helpers" and not value:
                raise ConfigError(path_str, "'helpers' names no helper", _line(val_node))
            if key == "helpers":
                check_helpers(value, f"{path_str}:{_line(val_node)}")
            setattr(cfg, key, value)
        elif key == "thresholds":
            cfg.thresholds = _entries(path_str, value, val_node)
        elif key == "separator_ids":
            cfg.separator_ids = _separator_ids(path_str, value, val_node)
        elif key == "keymap":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise ConfigError(
                    path_str, "'keymap' must map binding ids to keys", _line(val_node)
                )
            cfg.keymap = value
        elif key == "baseline":
            _baselines(path_str, cfg, value, val_node)
        elif key == "fleet":
            _fleet(path_str, cfg, value, val_node)
        elif key == "ablate":
            cfg.ablate = _ablate(path_str, value, val_node)
    return cfg


HF_KEYS = {
    "hf": "a model folder path",
    "dtype": "auto, float32, bfloat16 or float16",
    "device": "a torch device name (cpu, cuda, cuda:1)",
    "attn_implementation": "a transformers attention implementation (sdpa, eager, ...)",
    "batch_size": "a positive integer",
}
BASELINE_FORM = "'vllm:HOST:PORT', 'hf:PATH', {vllm: HOST:PORT}, {hf: PATH, dtype: ...} or a list"


def split_baseline(spec: str) -> tuple[str, str]:
    """('vllm', URL) or ('hf', PATH) of a --baseline value (a bare HOST:PORT is vLLM)."""
    raw = spec.strip()
    low = raw.lower()
    if low.startswith("hf:"):
        return "hf", raw[3:].strip()
    if low.startswith("vllm:"):
        return "vllm", raw[5:].strip()
    return "vllm", raw


def set_baseline(cfg: RunConfig, spec: str, where: str) -> None:
    """One --baseline value into `cfg`; a second baseline of the same engine is refused."""
    engine, value = split_baseline(spec)
    if not value:
        raise UsageError(f"{where} {spec!r}: expected {BASELINE_FORM}")
    if engine == "hf":
        if cfg.hf_baseline is not None:
            raise UsageError(f"{where}: one hf: reference at a time")
        cfg.hf_baseline = {"hf": value}
    else:
        if cfg.baseline is not None:
            raise UsageError(f"{where}: one vLLM baseline at a time")
        cfg.baseline = value


def _baselines(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`baseline:` as a string, a mapping ({vllm: URL} or {hf: PATH, dtype:, device:,
    attn_implementation:, batch_size:}) or a list of those."""
    items = (
        list(zip(value, node.value, strict=True)) if isinstance(value, list) else [(value, node)]
    )
    cfg.baseline, cfg.hf_baseline = None, None
    for v, n in items:
        where = f"{path}:{_line(n)}: baseline"
        if isinstance(v, str):
            set_baseline(cfg, v, where)
        elif isinstance(v, dict) and list(v) == ["vllm"] and isinstance(v["vllm"], str):
            set_baseline(cfg, "vllm:" + v["vllm"], where)
        elif isinstance(v, dict) and "hf" in v and isinstance(n, yaml.MappingNode):
            for k, v_node in _known_keys(path, n, set(HF_KEYS), " in baseline"):
                x = v[k]
                ok = isinstance(x, str) and bool(x.strip())
                if k == "batch_size":
                    ok = isinstance(x, int) and not isinstance(x, bool) and x > 0
                elif k == "dtype":
                    ok = x in ("auto", "float32", "bfloat16", "float16")
                if not ok and not (x is None and k != "hf"):
                    raise ConfigError(
                        path, f"'baseline.{k}' must be {HF_KEYS[k]}, got {x!r}", _line(v_node)
                    )
            set_baseline(cfg, "hf:" + v["hf"], where)
            cfg.hf_baseline = {
                "hf": v["hf"],
                **{k: v.get(k) for k in HF_KEYS if k != "hf" and v.get(k) is not None},
            }
        else:
            raise ConfigError(path, f"'baseline' must be {BASELINE_FORM}, got {v!r}", _line(n))


@dataclass
class AblateSection:
    """`ablate: {launch:, vary: [..], pairs:, chain:, servers: [..], start_timeout:, parallel:}` of a
    config file: what `kltui ablate` takes from it when its command line does not say."""

    launch: str | list[str] | None = None
    vary: list[str] = field(default_factory=list)
    pairs: bool | None = None
    chain: bool | None = None
    servers: list[str] = field(default_factory=list)
    start_timeout: float | None = None
    parallel: int | None = None


_ABLATE_KEYS = {
    "launch": "the server's launch command, a string or a list of words",
    "vary": "a list of KNOB=V1,V2 strings",
    "pairs": "true or false",
    "chain": "true or false",
    "servers": "a list of HOST:PORT strings (attach mode)",
    "start_timeout": "a positive number of seconds",
    "parallel": "a positive integer",
}


def _ablate(path: str, value: Any, node: yaml.Node) -> AblateSection:
    """The `ablate:` section, every field checked; the knobs themselves are checked by
    `kltui ablate` against the installed server's flags."""
    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(
            path, "'ablate' must be a mapping like {launch: CMD, vary: [KNOB=V1,V2]}", _line(node)
        )
    out = AblateSection()
    for k, v_node in _known_keys(path, node, set(_ABLATE_KEYS), " in ablate"):
        v, want = value[k], _ABLATE_KEYS[k]
        bad = False
        if k == "launch":
            words = isinstance(v, list) and v and all(isinstance(w, str) for w in v)
            bad = not (isinstance(v, str) and v.strip()) and not words
            out.launch = v
        elif k in ("vary", "servers"):
            if isinstance(v, str):
                v = [v]
            bad = not isinstance(v, list) or not all(isinstance(w, str) and w.strip() for w in v)
            setattr(out, k, list(v) if not bad else [])
        elif k in ("pairs", "chain"):
            bad = not isinstance(v, bool)
            setattr(out, k, v)
        elif k == "start_timeout":
            bad = isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < math.inf
            out.start_timeout = None if bad else float(v)
        else:
            bad = isinstance(v, bool) or not isinstance(v, int) or v <= 0
            out.parallel = v
        if bad:
            # [tp=1,2] in a YAML flow list is two items, 'tp=1' and 2
            hint = (
                '; quote a spec with commas: "tp=1,2"'
                if k == "vary" and isinstance(v, list)
                else ""
            )
            raise ConfigError(path, f"'ablate.{k}' must be {want}, got {v!r}{hint}", _line(v_node))
    return out


def _fleet(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`fleet: {router: URL, concurrency: N, require: gate|identical}`: the router whose workers
    are checked, how many at once, and what fails the run."""
    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(path, "'fleet' must be a mapping like {router: HOST:PORT}", _line(node))
    for k, v_node in _known_keys(path, node, set(_FLEET_KEYS), " in fleet"):
        v = value[k]
        if k == "router":
            _check_type(path, "fleet.router", v, v_node, (str,), _FLEET_KEYS[k])
            cfg.router = v
        elif k == "require":
            _check_type(path, "fleet.require", v, v_node, (str,), _FLEET_KEYS[k])
            if v not in FLEET_REQUIRE:
                raise ConfigError(
                    path, f"'fleet.require' must be {_FLEET_KEYS[k]}, got {v!r}", _line(v_node)
                )
            cfg.fleet_require = v
        else:
            _check_type(path, "fleet.concurrency", v, v_node, (int,), _FLEET_KEYS[k])
            if v <= 0:
                raise ConfigError(
                    path, f"'fleet.concurrency' must be a positive integer, got {v}", _line(v_node)
                )
            cfg.fleet_concurrency = v
    if "router" not in value:
        raise ConfigError(path, "'fleet' needs 'router' (the SGLang router's URL)", _line(node))


def _separator_ids(path: str, value: Any, node: yaml.Node) -> list[int]:
    """A list of token ids, one id, or "1,11" as on the command line."""
    from kltui.run.tokenizer import parse_separator_ids

    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        return list(value)
    if isinstance(value, str):
        return parse_separator_ids(value, f"{path}:{_line(node)}: 'separator_ids'")
    raise ConfigError(
        path, f"'separator_ids' must be a list of token ids >= 0, got {value!r}", _line(node)
    )


def _check_range(path: str, key: str, value: Any, node: yaml.Node) -> None:
    bad = (
        (
            key in ("samples", "max_new_tokens", "max_prompt_tokens", "concurrency")
            and value is not None
            and value <= 0
        )
        or (key in ("tail_threshold", "threshold") and not (math.isfinite(value) and value > 0))
        or (key == "min_cache_hit_ratio" and not 0 <= value <= 1)
        or (key in ("top_k", "extras") and value < 0)
        or (key == "stream_interval" and value is not None and value <= 0)
        or (key == "preset" and value not in PRESETS)
        or (key == "stress" and value is not None and value not in STRESS_LEVELS)
    )
    if bad:
        raise ConfigError(path, f"'{key}' must be {_SCALARS[key][1]}, got {value!r}", _line(node))


def _entries(path: str, value: Any, node: yaml.Node) -> list[ThresholdEntry]:
    if not isinstance(value, list) or not isinstance(node, yaml.SequenceNode):
        raise ConfigError(
            path, "'thresholds' must be a list of {model, tp, kl_div...}", _line(node)
        )
    out = []
    for item, item_node in zip(value, node.value, strict=True):
        if not isinstance(item, dict):
            raise ConfigError(path, "each thresholds entry must be a mapping", _line(item_node))
        for k, v_node in _known_keys(path, item_node, _ENTRY_KEYS, " in thresholds entry"):
            v = item[k]
            if k == "model":
                _check_type(path, k, v, v_node, (str,), "a model name or '*'")
            elif k == "tp":
                _check_type(path, k, v, v_node, (int, type(None)), "an integer or null")
            elif v is not None:
                _check_type(path, k, v, v_node, (int, float), "a positive number")
                if not (math.isfinite(v) and v > 0):
                    raise ConfigError(path, f"'{k}' must be a positive number", _line(v_node))
        if "model" not in item:
            raise ConfigError(path, "thresholds entry needs 'model'", _line(item_node))
        fields: dict[str, Any] = {
            k: (float(v) if k.startswith(("kl_", "tail")) and v is not None else v)
            for k, v in item.items()
        }
        out.append(ThresholdEntry(**fields))
    return out


def check_helpers(names: list[str], where: str) -> None:
    """Raise a UsageError naming the first helper name kltui does not know."""
    allowed_set = set(HELPERS)
    for n in names:
        if n not in allowed_set:
            raise UsageError(
                f"{where}: unknown helper '{n}'{_did_you_mean(n, allowed_set)}; "
                f"choose from {', '.join(sorted(allowed_set))}"
            )


@dataclass(frozen=True)
class Threshold:
    """One helper's resolved thresholds and where kl_div came from."""

    kl_div: float
    tail_threshold: float
    source: ThresholdSource


def resolve_threshold(
    cfg: RunConfig, helper: str, *, model: str | None, tp: int | None, deterministic: bool
) -> Threshold:
    """CLI/config threshold > config entry for (model, tp) > deterministic floor when the server
    runs deterministic inference > SGLang CI preset for the model > the common CI value."""
    tail = cfg.tail_threshold
    if cfg.threshold is not None:
        return Threshold(cfg.threshold, tail, ThresholdSource("flag"))
    sources: list[tuple[ThresholdSource, list[ThresholdEntry]]] = [
        (ThresholdSource("config"), cfg.thresholds)
    ]
    if cfg.preset:
        sources.append((ThresholdSource("preset", cfg.preset), _preset(cfg.preset)))
    if deterministic:
        why = "server reports enable_deterministic_inference"
        sources.append(
            (ThresholdSource("preset", "deterministic", why=why), _preset("deterministic"))
        )
    sources.append((ThresholdSource("preset", "sglang-ci"), _preset("sglang-ci")))
    for src, entries in sources:
        for e in entries:
            if e.matches(model, tp) and (kl := e.for_helper(helper)) is not None:
                t = e.tail_threshold if e.tail_threshold is not None else tail
                return Threshold(float(kl), t, replace(src, model=e.model))
    return Threshold(DEFAULT_KL_DIV, tail, ThresholdSource("default"))


def _preset(name: str) -> list[ThresholdEntry]:
    return [ThresholdEntry(**e) for e in PRESETS[name]]


__all__ = [
    "AblateSection",
    "ConfigError",
    "DETERMINISTIC_KL_DIV",
    "RunConfig",
    "ThresholdEntry",
    "load_config_file",
    "resolve_threshold",
]
