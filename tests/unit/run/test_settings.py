"""Each run setting is declared once (kltui/run/settings.py): the config file, the command line,
build_config and the JSON schema's `config` all agree with that declaration."""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest

from kltui.cli.options import RUN_SIZES, build_config
from kltui.cli.parser import make_parser
from kltui.cli.run_config import HOOKS
from kltui.run.config import ConfigError, RunConfig, load_config_file
from kltui.run.config_readers import READERS
from kltui.run.settings import FLEET_REQUIRE, SETTINGS
from kltui.run.settings_model import YamlKey
from kltui.schemas import load

# a value of each accepted type, tried in this order; the first one in range is used
CANDIDATES = (True, 1, 0.5, "sglang-ci", "light", "gate", "kl_test_utils", "a-name")


def test_every_runconfig_field_is_declared_once_in_its_order():
    assert list(SETTINGS) == [f.name for f in fields(RunConfig)]


def test_schema_config_entries_are_the_declared_ones():
    config = load("check")["$defs"]["config"]
    assert config["properties"] == SETTINGS.schema_entries()
    assert sorted(config["required"]) == sorted(RunConfig.record_keys())
    assert tuple(RunConfig().to_record()) == RunConfig.record_keys()
    assert set(RunConfig.record_keys()) == set(SETTINGS.schema_entries())


def test_fleet_require_choices_are_the_readings():
    from kltui.readings.fleet_model import DEFAULT_FLEET_REQUIRE
    from kltui.readings.fleet_model import FLEET_REQUIRE as READ

    assert FLEET_REQUIRE == READ and DEFAULT_FLEET_REQUIRE in FLEET_REQUIRE
    from kltui.run.config_model import RunConfig

    assert RunConfig().fleet_require == DEFAULT_FLEET_REQUIRE


def _sample(yk: YamlKey) -> object:
    for v in CANDIDATES:
        typed = isinstance(v, yk.types) and (bool in yk.types or not isinstance(v, bool))
        if typed and (yk.valid is None or yk.valid(v)):
            return v
    raise AssertionError(f"no sample value for {yk.key}")


def _yaml(key: str, value: str) -> str:
    if "." not in key:
        return f"{key}: {value}\n"
    top, inner = key.split(".", 1)
    router = "" if top != "fleet" or inner == "router" else "  router: 'h:1'\n"
    return f"{top}:\n{router}  {inner}: {value}\n"


SCALARS = SETTINGS.yaml_scalars()


@pytest.mark.parametrize("key", sorted(SCALARS))
def test_every_yaml_key_is_accepted_with_its_type(tmp_path, key):
    name, yk = SCALARS[key]
    value = _sample(yk)
    path = tmp_path / "cfg.yaml"
    text = str(value).lower() if isinstance(value, bool) else repr(value)  # 'x', 1, 0.5, true
    path.write_text(_yaml(key, text))
    cfg = load_config_file(str(path))
    assert getattr(cfg, name) == value
    assert isinstance(getattr(cfg, name), float if float in yk.types else type(value))

    path.write_text(_yaml(key, "[1]"))
    with pytest.raises(ConfigError, match=rf"cfg.yaml:\d+: '{key}' must be .*got \[1\]") as e:
        load_config_file(str(path))
    assert yk.desc in str(e.value)


def test_every_structured_yaml_key_has_its_reader():
    structured = SETTINGS.yaml_top_keys() - {k for k in SCALARS if "." not in k}
    assert structured == set(READERS)


# the commands whose options build_config reads (others have a --server or --theme of their own)
RUN_COMMANDS = ("tui", "check", "demo")


def _actions(parser: argparse.ArgumentParser) -> dict[str, list[argparse.Action]]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    out: dict[str, list[argparse.Action]] = {}
    for sp in (sub.choices[c] for c in RUN_COMMANDS):
        for a in sp._actions:
            for opt in a.option_strings:
                out.setdefault(opt, []).append(a)
    return out


def test_every_flag_is_in_the_parser_with_its_help():
    from kltui.cli.options import DEMO_SIZES

    actions = _actions(make_parser())
    for name, s in SETTINGS.items():
        for f in s.flags:
            assert f.name in actions, f"{name}: {f.name} is in no parser"
            helps = {a.help for a in actions[f.name]}
            assert helps <= {f.help_for(RUN_SIZES), f.help_for(DEMO_SIZES)}, f"{f.name}: {helps}"
            assert {a.dest for a in actions[f.name]} == {f.dest}


def test_every_flag_not_copied_has_its_hook():
    own = {name for name, s in SETTINGS.items() if s.flags and not s.copied}
    assert own - {"theme"} == set(HOOKS)  # --theme: the dashboard's own


def test_every_copied_flag_sets_its_field(tmp_path, monkeypatch):
    monkeypatch.setattr("kltui.run.prompts.load_file", lambda path: None)
    monkeypatch.setattr("kltui.run.tokenizer.resolve", lambda name: None)
    monkeypatch.setattr("kltui.engines.model_config.load_model_config", lambda path, src: None)
    log = tmp_path / "vllm.log"
    log.write_text("")
    parser = make_parser()
    for dest, name in SETTINGS.copied_flags().items():
        (f,) = [f for f in SETTINGS[name].flags if f.dest == dest]
        argv = ["tui", "--server", "localhost:1", "--baseline", "localhost:2", f.name]
        if f.kwargs.get("action") != "store_true":
            choices = f.kwargs.get("choices")
            value = choices[-1] if choices else str(log) if name == "baseline_log" else "7"
            argv.append(value)
        if name == "fleet_require":
            argv[1:3] = ["--router", "localhost:5"]
        args = parser.parse_args(argv)
        cfg = build_config(args)
        assert getattr(cfg, name) == getattr(args, dest), name
        assert getattr(cfg, name) != getattr(RunConfig(), name), name
