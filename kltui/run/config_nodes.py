"""Reading a config file's YAML nodes: every key known, every type checked, and every error
naming the file and the line."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kltui.errors import FileLineError, UsageError
from kltui.registry import HELPERS

if TYPE_CHECKING:  # YAML is read only with a config file: loaded there
    import yaml


class ConfigError(FileLineError):
    """A config file that cannot be used, named with its line."""


def did_you_mean(key: str, options: set[str]) -> str:
    """' (did you mean 'X'?)' for the closest known name, or ''."""
    close = difflib.get_close_matches(key, sorted(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def line(node: yaml.Node) -> int:
    """The node's line in its file (1-based)."""
    return node.start_mark.line + 1


def known_keys(
    path: str, node: yaml.Node, allowed: set[str], where: str = ""
) -> Iterator[tuple[str, yaml.Node]]:
    """Each key of a YAML mapping with its value's node; an unknown key is an error."""
    for k_node, v_node in node.value:
        k = k_node.value
        if k not in allowed:
            raise ConfigError(
                path, f"unknown key '{k}'{where}{did_you_mean(k, allowed)}", line(k_node)
            )
        yield k, v_node


def check_type(
    path: str, key: str, value: Any, node: yaml.Node, types: tuple[type, ...], desc: str
) -> None:
    """`value` is one of `types` (a bool is no int unless bool is named), else an error."""
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(path, f"'{key}' must be {desc}, got {value!r}", line(node))
    if not isinstance(value, types):
        raise ConfigError(path, f"'{key}' must be {desc}, got {value!r}", line(node))


def check_helpers(names: list[str], where: str) -> None:
    """Raise a UsageError naming the first helper name kltui does not know."""
    allowed_set = set(HELPERS)
    for n in names:
        if n not in allowed_set:
            raise UsageError(
                f"{where}: unknown helper '{n}'{did_you_mean(n, allowed_set)}; "
                f"choose from {', '.join(sorted(allowed_set))}"
            )
