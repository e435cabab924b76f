"""multiturn's settings (run/settings_multiturn.py): the kit's defaults, the config file's
`multiturn:` section and the flags that are not copied as they are."""

from __future__ import annotations

import pytest

from kltui.cli.options import build_config
from kltui.cli.parser import make_parser
from kltui.errors import UsageError
from kltui.helpers.multiturn_plan import MultiturnShape
from kltui.run.config import ConfigError, RunConfig, load_config_file


def test_the_defaults_are_the_kits():
    assert RunConfig().multiturn_shape() == MultiturnShape()
    assert MultiturnShape().to_json()["turn_suffixes"] == [512, 256]


def test_the_config_section(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("multiturn:\n  groups: 2\n  turn_suffixes: [32, 16, 8]\n  interleave: false\n")
    shape = load_config_file(str(path)).multiturn_shape()
    assert (shape.groups, shape.turn_suffixes, shape.interleave) == (2, (32, 16, 8), False)
    path.write_text("multiturn:\n  turn_suffixes: [32, 0]\n")
    with pytest.raises(ConfigError, match="'multiturn.turn_suffixes' must be a list of positive"):
        load_config_file(str(path))
    path.write_text("multiturn:\n  branchez: 2\n")
    with pytest.raises(ConfigError, match="unknown key 'branchez' in multiturn"):
        load_config_file(str(path))


def test_the_flags_that_have_hooks():
    parser = make_parser()
    base = ["check", "--server", "localhost:1"]
    args = parser.parse_args(
        [*base, "--multiturn-turn-suffixes", "64,32", "--multiturn-no-interleave"]
    )
    cfg = build_config(args)
    assert (cfg.multiturn_turn_suffixes, cfg.multiturn_interleave) == ([64, 32], False)
    with pytest.raises(UsageError, match="--multiturn-turn-suffixes '64,x'"):
        build_config(parser.parse_args([*base, "--multiturn-turn-suffixes", "64,x"]))
