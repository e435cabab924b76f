"""How each config-file key is read into a RunConfig: the generic check of a scalar key (its
types and range, from run/settings.py) and the readers of the structured keys."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kltui.run.baselines import read_baselines
from kltui.run.config_ablate import read_ablate
from kltui.run.config_nodes import ConfigError, check_helpers, check_type, known_keys, line
from kltui.run.settings import SETTINGS
from kltui.run.settings_model import YamlKey
from kltui.run.settings_multiturn import LENGTHS_DESC, lengths_ok
from kltui.run.thresholds import ThresholdEntry

if TYPE_CHECKING:  # YAML is read only with a config file: loaded there
    import yaml

    from kltui.run.config_model import RunConfig

# a structured key's reader: (file, the config it sets, the value, its node)
Reader = Callable[[str, "RunConfig", Any, "yaml.Node"], None]
_ENTRY_KEYS = set(ThresholdEntry.__dataclass_fields__)
_FLEET = SETTINGS.yaml_section("fleet")
_MULTITURN = SETTINGS.yaml_section("multiturn")


def set_scalar(
    path: str, cfg: RunConfig, name: str, yk: YamlKey, value: Any, node: yaml.Node
) -> None:
    """One scalar key, its type then its range checked, into the field `name`."""
    check_type(path, yk.key, value, node, yk.types, yk.desc)
    if yk.valid is not None and not yk.valid(value):
        raise ConfigError(path, f"'{yk.key}' must be {yk.desc}, got {value!r}", line(node))
    setattr(cfg, name, float(value) if float in yk.types and value is not None else value)
    if name == "max_prompt_tokens":
        cfg.prompt_cut_asked = True


def _names(path: str, key: str, value: Any, node: yaml.Node) -> list[str]:
    """A list of strings, or one "a,b" string as on the command line."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(path, f"'{key}' must be a list of strings", line(node))
    return value


def read_servers(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`servers:` (each URL is checked with the command line's, in build_config)."""
    cfg.servers = _names(path, "servers", value, node)


def read_helpers(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`helpers:`, every name known."""
    names = _names(path, "helpers", value, node)
    if not names:
        raise ConfigError(path, "'helpers' names no helper", line(node))
    check_helpers(names, f"{path}:{line(node)}")
    cfg.helpers = names


def read_keymap(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`keymap: {binding id: key}`."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(path, "'keymap' must map binding ids to keys", line(node))
    cfg.keymap = value


def read_fleet(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`fleet: {router: URL, concurrency: N, require: gate|identical}`: the router whose workers
    are checked, how many at once, and what fails the run."""
    import yaml  # loaded with the config file (run/config.py)

    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(path, "'fleet' must be a mapping like {router: HOST:PORT}", line(node))
    for k, v_node in known_keys(path, node, set(_FLEET), " in fleet"):
        name, yk = _FLEET[k]
        set_scalar(path, cfg, name, yk, value[k], v_node)
    if "router" not in value:
        raise ConfigError(path, "'fleet' needs 'router' (the SGLang router's URL)", line(node))


def read_separator_ids(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """A list of token ids, one id, or "1,11" as on the command line."""
    from kltui.run.tokenizer import parse_separator_ids

    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        cfg.separator_ids = list(value)
    elif isinstance(value, str):
        cfg.separator_ids = parse_separator_ids(value, f"{path}:{line(node)}: 'separator_ids'")
    else:
        raise ConfigError(
            path, f"'separator_ids' must be a list of token ids >= 0, got {value!r}", line(node)
        )


def read_thresholds(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`thresholds:`, a list of per-model entries as SGLang's ThresholdEntry."""
    import yaml  # loaded with the config file (run/config.py)

    if not isinstance(value, list) or not isinstance(node, yaml.SequenceNode):
        raise ConfigError(path, "'thresholds' must be a list of {model, tp, kl_div...}", line(node))
    out = []
    for item, item_node in zip(value, node.value, strict=True):
        if not isinstance(item, dict):
            raise ConfigError(path, "each thresholds entry must be a mapping", line(item_node))
        for k, v_node in known_keys(path, item_node, _ENTRY_KEYS, " in thresholds entry"):
            _check_entry_key(path, k, item[k], v_node)
        if "model" not in item:
            raise ConfigError(path, "thresholds entry needs 'model'", line(item_node))
        fields: dict[str, Any] = {
            k: (float(v) if k.startswith(("kl_", "tail")) and v is not None else v)
            for k, v in item.items()
        }
        out.append(ThresholdEntry(**fields))
    cfg.thresholds = out


def _check_entry_key(path: str, k: str, v: Any, v_node: yaml.Node) -> None:
    if k == "model":
        check_type(path, k, v, v_node, (str,), "a model name or '*'")
    elif k == "tp":
        check_type(path, k, v, v_node, (int, type(None)), "an integer or null")
    elif v is not None:
        check_type(path, k, v, v_node, (int, float), "a positive number")
        if not (math.isfinite(v) and v > 0):
            raise ConfigError(path, f"'{k}' must be a positive number", line(v_node))


def read_multiturn(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`multiturn: {groups, branches, prefix, branch_suffix, branch_step, turn_suffixes,
    interleave, replay_batch, temperature, sampling_seed}` (run/settings_multiturn.py)."""
    import yaml  # loaded with the config file (run/config.py)

    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(path, "'multiturn' must be a mapping like {groups: 3}", line(node))
    for k, v_node in known_keys(path, node, {*_MULTITURN, "turn_suffixes"}, " in multiturn"):
        if k == "turn_suffixes":
            if not lengths_ok(value[k]):
                raise ConfigError(
                    path, f"'multiturn.turn_suffixes' must be {LENGTHS_DESC}", line(v_node)
                )
            cfg.multiturn_turn_suffixes = list(value[k])
            continue
        name, yk = _MULTITURN[k]
        set_scalar(path, cfg, name, yk, value[k], v_node)


def read_ablate_section(path: str, cfg: RunConfig, value: Any, node: yaml.Node) -> None:
    """`ablate:` (run/config_ablate.py)."""
    cfg.ablate = read_ablate(path, value, node)


# the config file's structured keys (run/settings.py declares which keys a file has)
READERS: dict[str, Reader] = {
    "servers": read_servers,
    "helpers": read_helpers,
    "thresholds": read_thresholds,
    "separator_ids": read_separator_ids,
    "keymap": read_keymap,
    "baseline": read_baselines,
    "fleet": read_fleet,
    "ablate": read_ablate_section,
    "multiturn": read_multiturn,
}
