"""The baselines a run compares against: one vLLM server and/or one hf: reference, from
--baseline values or a config file's `baseline:`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kltui.errors import UsageError
from kltui.run.config_nodes import ConfigError, known_keys, line
from kltui.run.settings import HF_DTYPES

if TYPE_CHECKING:  # YAML is read only with a config file: loaded there
    import yaml

    from kltui.run.config_model import RunConfig

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


def read_baselines(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`baseline:` as a string, a mapping ({vllm: URL} or {hf: PATH, dtype:, device:,
    attn_implementation:, batch_size:}) or a list of those."""
    import yaml  # loaded with the config file (run/config.py)

    items = (
        list(zip(value, node.value, strict=True)) if isinstance(value, list) else [(value, node)]
    )
    cfg.baseline, cfg.hf_baseline = None, None
    for v, n in items:
        where = f"{path}:{line(n)}: baseline"
        if isinstance(v, str):
            set_baseline(cfg, v, where)
        elif isinstance(v, dict) and list(v) == ["vllm"] and isinstance(v["vllm"], str):
            set_baseline(cfg, "vllm:" + v["vllm"], where)
        elif isinstance(v, dict) and "hf" in v and isinstance(n, yaml.MappingNode):
            _check_hf(path, v, n)
            set_baseline(cfg, "hf:" + v["hf"], where)
            cfg.hf_baseline = {
                "hf": v["hf"],
                **{k: v.get(k) for k in HF_KEYS if k != "hf" and v.get(k) is not None},
            }
        else:
            raise ConfigError(path, f"'baseline' must be {BASELINE_FORM}, got {v!r}", line(n))


def _check_hf(path: str, v: dict, n: yaml.MappingNode) -> None:
    """An `{hf: PATH, ...}` baseline's keys, each checked (null: the default, except hf)."""
    for k, v_node in known_keys(path, n, set(HF_KEYS), " in baseline"):
        x = v[k]
        ok = isinstance(x, str) and bool(x.strip())
        if k == "batch_size":
            ok = isinstance(x, int) and not isinstance(x, bool) and x > 0
        elif k == "dtype":
            ok = x in HF_DTYPES
        if not ok and not (x is None and k != "hf"):
            raise ConfigError(path, f"'baseline.{k}' must be {HF_KEYS[k]}, got {x!r}", line(v_node))
