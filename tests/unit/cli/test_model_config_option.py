"""--model-config (issue 57): a bad config.json is refused in one line naming the file and the
field, exit 2, before any server is contacted; a good one is recorded in the run's config."""

from __future__ import annotations

from pathlib import Path

from kltui.cli.commands import main
from kltui.cli.options import build_config
from kltui.cli.parser import make_parser

DATA = Path(__file__).parents[2] / "data" / "geometry"


def test_a_bad_model_config_is_one_line_and_exit_2(capsys):
    bad = DATA / "config_bad_window.json"
    # port 9 (discard) on loopback: never contacted, the file is refused first
    code = main(["check", "--server", "127.0.0.1:9", "--model-config", str(bad)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(bad) in err[0] and "'sliding_window'" in err[0] and "--model-config" in err[0]


def test_a_missing_model_config_is_exit_2(capsys, tmp_path):
    code = main(["check", "--server", "127.0.0.1:9", "--model-config", str(tmp_path / "x.json")])
    assert code == 2
    assert "cannot be read" in capsys.readouterr().err


def test_a_good_model_config_is_recorded():
    good = str(DATA / "config_go.json")
    args = make_parser().parse_args(["check", "--server", "127.0.0.1:9", "--model-config", good])
    cfg = build_config(args)
    assert cfg.model_config == good and cfg.to_record()["model_config"] == good
