"""SGLang's input-id cache (a .json list of token-id lists, already cut by SGLang) is sent as
it is unless truncation is asked for; `--max-prompt-tokens 0` or `none` switches it off."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kltui.cli.commands import make_parser
from kltui.cli.options import build_config
from kltui.run.config import RunConfig, load_config_file
from kltui.run.prompt_ids import build_prompt_set

LENGTHS = [4000, 2500, 1200]


@pytest.fixture
def id_cache(tmp_path):
    path = tmp_path / "longbench_ids.json"
    path.write_text(json.dumps([list(range(1, n + 1)) for n in LENGTHS]))
    return str(path)


def parse(*argv: str) -> RunConfig:
    return build_config(make_parser().parse_args(["check", "--server", "127.0.0.1:1", *argv]))


async def test_id_cache_is_sent_as_it_is_by_default(id_cache):
    cfg = parse("--prompts", id_cache, "--samples", "3")
    pset = await build_prompt_set(cfg, None, {})
    assert [x.size for x in pset.ids] == LENGTHS
    assert pset.max_prompt_tokens is None
    assert any("sent as they are" in n for n in pset.notes)
    np.testing.assert_array_equal(pset.ids[0], np.arange(1, 4001))


async def test_id_cache_is_cut_when_asked(id_cache, tmp_path):
    cfg = parse("--prompts", id_cache, "--samples", "3", "--max-prompt-tokens", "1000")
    pset = await build_prompt_set(cfg, None, {})
    assert all(500 <= x.size <= 1500 for x in pset.ids)
    conf = tmp_path / "c.yaml"
    conf.write_text(f"prompts: {id_cache}\nsamples: 3\nmax_prompt_tokens: 1000\n")
    from_file = await build_prompt_set(load_config_file(str(conf)), None, {})
    assert [x.size for x in from_file.ids] == [x.size for x in pset.ids]


@pytest.mark.parametrize("off", ["0", "none", "None"])
def test_max_prompt_tokens_off_from_the_cli(off):
    cfg = parse("--max-prompt-tokens", off)
    assert cfg.max_prompt_tokens is None and cfg.prompt_cut_asked


def test_max_prompt_tokens_rejects_negative(capsys):
    with pytest.raises(SystemExit):
        parse("--max-prompt-tokens", "-3")
    assert "must be > 0" in capsys.readouterr().err


def test_asked_is_not_recorded():
    assert "prompt_cut_asked" not in parse("--max-prompt-tokens", "10").to_record()
