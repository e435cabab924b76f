"""A run's configuration: RunConfig (run/config_model.py), read from a YAML config file
(validated, with file:line errors), and each helper's threshold resolved."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kltui.metrics.presets import DETERMINISTIC_KL_DIV
from kltui.run.baselines import set_baseline, split_baseline
from kltui.run.config_ablate import AblateSection
from kltui.run.config_model import RunConfig
from kltui.run.config_nodes import ConfigError, check_helpers, known_keys, line
from kltui.run.config_readers import READERS, set_scalar
from kltui.run.settings import SETTINGS, STRESS_LEVELS
from kltui.run.thresholds import Threshold, ThresholdEntry, resolve_threshold

if TYPE_CHECKING:
    import yaml

_SCALARS = SETTINGS.yaml_scalars()
_TOP_KEYS = SETTINGS.yaml_top_keys()


def load_config_file(path_str: str, base: RunConfig | None = None) -> RunConfig:
    """Reads a YAML config into a RunConfig; every error names the file and line."""
    import yaml  # only a run with a config file reads YAML (a check's start stays light)

    text = _read(path_str)
    root = _compose(path_str, text)
    cfg = base or RunConfig()
    if root is None:
        return cfg
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(path_str, "top level must be a mapping of settings", line(root))
    data = yaml.safe_load(text)
    for key, val_node in known_keys(path_str, root, _TOP_KEYS):
        if key in _SCALARS:
            name, yk = _SCALARS[key]
            set_scalar(path_str, cfg, name, yk, data[key], val_node)
        else:
            READERS[key](path_str, cfg, data[key], val_node)
    return cfg


def _read(path_str: str) -> str:
    try:
        return Path(path_str).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path_str, "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(path_str, f"cannot read as UTF-8 text ({e})") from None


def _compose(path_str: str, text: str) -> yaml.Node | None:
    import yaml

    try:
        return yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(
            path_str, f"invalid YAML: {problem}", mark.line + 1 if mark else None
        ) from None


__all__ = [
    "AblateSection",
    "ConfigError",
    "DETERMINISTIC_KL_DIV",
    "STRESS_LEVELS",
    "RunConfig",
    "Threshold",
    "ThresholdEntry",
    "check_helpers",
    "load_config_file",
    "resolve_threshold",
    "set_baseline",
    "split_baseline",
]
