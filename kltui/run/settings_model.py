"""What one run setting declares (run/settings.py holds them all): its command-line flag(s), its
config-file key, and its entry in the JSON report's `config`. Data only, so that `kltui --help`
imports no YAML parser and no numpy."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# the JSON schema's shared shapes (kltui/schemas/check.schema.json's $defs)
STRING_OR_NULL = "#/$defs/string_or_null"
INT_OR_NULL = "#/$defs/int_or_null"


def ref(target: str) -> dict[str, Any]:
    """A schema entry that is one of check.schema.json's $defs."""
    return {"$ref": target}


def nullable(json_type: str, **more: Any) -> dict[str, Any]:
    """A schema entry of one JSON type or null (a report of an older kltui may lack the key)."""
    return {"type": [json_type, "null"], **more}


@dataclass(frozen=True)
class Flag:
    """One command-line option: what `add_argument` gets."""

    name: str  # "--samples"
    help: str
    # add_argument's other keywords (type, metavar, choices, action, default)
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    # the help names the run's default size ("{samples}"): the demo's differ (cli/options.py)
    sized: bool = False

    @property
    def dest(self) -> str:
        """The attribute argparse stores the value in."""
        return self.name.removeprefix("--").replace("-", "_")

    def help_for(self, sizes: Mapping[str, int]) -> str:
        """The help text, with the command's sizes where it names them."""
        return self.help.format(**sizes) if self.sized else self.help

    def add_to(self, p: argparse.ArgumentParser | argparse._ActionsContainer, sizes) -> None:
        """Add this option to a parser (or to one of its groups)."""
        p.add_argument(self.name, help=self.help_for(sizes), **self.kwargs)


def flag(name: str, help: str, *, sized: bool = False, **kwargs: Any) -> Flag:
    """A Flag, written as its `add_argument` call."""
    return Flag(name, help, kwargs, sized)


@dataclass(frozen=True)
class YamlKey:
    """The setting's key in a config file (run/config.py reads it)."""

    key: str  # "samples"; "fleet.router" is `router` inside `fleet:`
    # the accepted YAML types; () : a structured value that run/config.py's own reader checks
    types: tuple[type, ...] = ()
    desc: str = ""  # what an error says it must be: "'samples' must be DESC, got ..."
    valid: Callable[[Any], bool] | None = None  # the value's range, once its type is right

    @property
    def scalar(self) -> bool:
        """Whether the generic check (type, then range) reads it."""
        return bool(self.types)

    @property
    def top(self) -> str:
        """The config file's top-level key it is under."""
        return self.key.split(".", 1)[0]


@dataclass(frozen=True)
class Setting:
    """One RunConfig field: where it is set from and how it is recorded."""

    # its entry in the JSON report's `config` (kltui/schemas/check.schema.json); None: not recorded
    schema: dict[str, Any] | None
    yaml: YamlKey | None = None
    flags: tuple[Flag, ...] = ()
    # build_config copies a given flag's value into the field (a store_true flag: True when
    # given); False: its own code reads the flag (cli/run_config.py's hooks; --theme: the view)
    copied: bool = True


class SettingTable(Mapping[str, Setting]):
    """Every RunConfig field's Setting, by field name, and what derives from them."""

    def __init__(
        self, settings: dict[str, Setting], *, record_also: dict[str, dict[str, Any]]
    ) -> None:
        self._settings = settings
        # recorded keys that are no field (RunConfig.to_record adds them): key -> schema entry
        self._record_also = record_also

    def __getitem__(self, name: str) -> Setting:
        return self._settings[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._settings)

    def __len__(self) -> int:
        return len(self._settings)

    def schema_entries(self) -> dict[str, dict[str, Any]]:
        """The JSON report's `config` properties, as check.schema.json must say them."""
        entries = {name: s.schema for name, s in self.items() if s.schema is not None}
        return {**entries, **self._record_also}

    def unrecorded(self) -> tuple[str, ...]:
        """The fields a recording leaves out (RunConfig.to_record)."""
        return tuple(name for name, s in self.items() if s.schema is None)

    def yaml_scalars(self) -> dict[str, tuple[str, YamlKey]]:
        """Config-file key -> (field, its YamlKey) for the keys the generic check reads."""
        return {s.yaml.key: (n, s.yaml) for n, s in self.items() if s.yaml and s.yaml.scalar}

    def yaml_top_keys(self) -> set[str]:
        """Every key a config file may have at its top level."""
        return {s.yaml.top for s in self.values() if s.yaml}

    def yaml_section(self, top: str) -> dict[str, tuple[str, YamlKey]]:
        """The keys inside a section (`fleet:`) -> (field, its YamlKey)."""
        inner = self.yaml_scalars().items()
        return {k.split(".", 1)[1]: v for k, v in inner if k.startswith(top + ".")}

    def copied_flags(self) -> dict[str, str]:
        """argparse dest -> field, for the flags build_config copies as they are."""
        return {f.dest: name for name, s in self.items() if s.copied for f in s.flags}
