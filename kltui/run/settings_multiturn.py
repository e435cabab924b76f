"""The multiturn helper's settings (issue 58), each a RunConfig field with its flag and its key in
a config file's `multiturn:` section; run/settings.py appends them to its table. Every default
is SGLang's `unified_radix_cache_kit` (helpers/multiturn_plan.MultiturnShape)."""

from __future__ import annotations

import math
from typing import Any

from kltui.argtypes import nonneg_int, number, pos_int
from kltui.run.settings_model import Setting, YamlKey, flag, nullable

_KIT = "unified_radix_cache_kit's"


def _positive(v: Any) -> bool:
    return v > 0


def _nonneg(v: Any) -> bool:
    return v >= 0


LENGTHS_DESC = "a list of positive integers"


def lengths_ok(v: Any) -> bool:
    """A non-empty list of positive token counts (multiturn.turn_suffixes)."""
    return (
        isinstance(v, list)
        and bool(v)
        and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v)
    )


def _comparable(v: Any) -> bool:
    return math.isfinite(v) and v >= 0


def _int(key: str, desc: str, valid, help: str, **kw: Any) -> Setting:
    name = "--multiturn-" + key.replace("_", "-")
    return Setting(
        nullable("integer"),
        YamlKey(f"multiturn.{key}", (int,), desc, valid),
        (flag(name, help, **kw),),
    )


MULTITURN_SETTINGS: dict[str, Setting] = {
    "multiturn_groups": _int(
        "groups", "a positive integer", _positive, f"multiturn: groups ({_KIT} 3)", type=pos_int
    ),
    "multiturn_branches": _int(
        "branches",
        "a positive integer",
        _positive,
        f"multiturn: branches per group ({_KIT} 3)",
        type=pos_int,
    ),
    "multiturn_prefix": _int(
        "prefix",
        "a positive integer",
        _positive,
        f"multiturn: tokens of each group's shared prefix, from its prompt ({_KIT} 512)",
        type=pos_int,
    ),
    "multiturn_branch_suffix": _int(
        "branch_suffix",
        "a positive integer",
        _positive,
        f"multiturn: random tokens after the prefix in branch 0 ({_KIT} 256)",
        type=pos_int,
    ),
    "multiturn_branch_step": _int(
        "branch_step",
        "an integer >= 0",
        _nonneg,
        f"multiturn: tokens more per branch, branch b adds suffix + b x step ({_KIT} 64)",
        type=nonneg_int,
    ),
    "multiturn_turn_suffixes": Setting(
        nullable("array", items={"type": "integer", "minimum": 1}),
        # a list: run/config_readers.read_multiturn checks it (LENGTHS_DESC)
        YamlKey("multiturn.turn_suffixes"),
        (
            flag(
                "--multiturn-turn-suffixes",
                f"multiturn: random tokens added before each later turn ({_KIT} 512,256)",
                metavar="N,N,...",
            ),
        ),
        copied=False,
    ),
    "multiturn_interleave": Setting(
        nullable("boolean"),
        YamlKey("multiturn.interleave", (bool,), "true or false"),
        (
            flag(
                "--multiturn-no-interleave",
                "multiturn: submit later turns in conversation order, not interleaved across "
                "groups (g0b0, g1b0, g2b0, g0b1, ...)",
                action="store_true",
            ),
        ),
        copied=False,
    ),
    "multiturn_replay_batch": _int(
        "replay_batch",
        "a positive integer",
        _positive,
        f"multiturn: replays per scoring request ({_KIT} replay_batch_size 1)",
        type=pos_int,
    ),
    "multiturn_temperature": Setting(
        nullable("number"),
        YamlKey("multiturn.temperature", (int, float), "0 or 1", _comparable),
        (
            flag(
                "--multiturn-temperature",
                f"multiturn: sampling temperature, 1 or 0 ({_KIT} 1)",
                type=number,
            ),
        ),
    ),
    "multiturn_sampling_seed": _int(
        "sampling_seed",
        "an integer",
        None,
        "multiturn: sampling_seed of every decode (42, SGLang's default under deterministic "
        "inference)",
        type=int,
    ),
}
