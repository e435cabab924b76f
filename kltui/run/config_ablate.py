"""A config file's `ablate:` section: what `kltui ablate` takes from it when its command line
does not say. How a sweep is laid out, not what one run measures: never recorded."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kltui.run.config_nodes import ConfigError, known_keys, line

if TYPE_CHECKING:  # YAML is read only with a config file: loaded there
    import yaml


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


ABLATE_KEYS = {
    "launch": "the server's launch command, a string or a list of words",
    "vary": "a list of KNOB=V1,V2 strings",
    "pairs": "true or false",
    "chain": "true or false",
    "servers": "a list of HOST:PORT strings (attach mode)",
    "start_timeout": "a positive number of seconds",
    "parallel": "a positive integer",
}


def read_ablate(path: str, value: Any, node: yaml.Node) -> AblateSection:
    """The `ablate:` section, every field checked; the knobs themselves are checked by
    `kltui ablate` against the installed server's flags."""
    import yaml  # loaded with the config file (run/config.py)

    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(
            path, "'ablate' must be a mapping like {launch: CMD, vary: [KNOB=V1,V2]}", line(node)
        )
    out = AblateSection()
    for k, v_node in known_keys(path, node, set(ABLATE_KEYS), " in ablate"):
        v = value[k]
        if k in ("vary", "servers") and isinstance(v, str):
            v = [v]  # one item; the error below shows it as the list it became
        if _set(out, k, v):
            # [tp=1,2] in a YAML flow list is two items, 'tp=1' and 2
            hint = (
                '; quote a spec with commas: "tp=1,2"'
                if k == "vary" and isinstance(v, list)
                else ""
            )
            want = ABLATE_KEYS[k]
            raise ConfigError(path, f"'ablate.{k}' must be {want}, got {v!r}{hint}", line(v_node))
    return out


def _set(out: AblateSection, k: str, v: Any) -> bool:
    """Sets one key of the section; True when its value is bad."""
    bad = False
    if k == "launch":
        words = isinstance(v, list) and v and all(isinstance(w, str) for w in v)
        bad = not (isinstance(v, str) and v.strip()) and not words
        out.launch = v
    elif k in ("vary", "servers"):
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
    return bad
