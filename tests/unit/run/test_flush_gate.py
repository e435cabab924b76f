"""When the TUI asks before flushing: which hosts are loopback, and how `--yes-flush` / the
`yes_flush` config key are read. (The question itself: tests/tui/test_confirm_flush.py.)"""

from __future__ import annotations

import pytest

from kltui.cli.commands import make_parser
from kltui.cli.options import build_config
from kltui.run.config import ConfigError, load_config_file
from kltui.run.flush_gate import is_loopback


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://127.0.0.1:30000", True),
        ("http://127.8.9.10:30000", True),  # all of 127.0.0.0/8
        ("http://[::1]:30000", True),
        ("http://[::ffff:127.0.0.1]:30000", True),  # IPv4-mapped loopback
        ("http://localhost:30000", True),  # resolved (/etc/hosts), not matched by name
        ("http://10.1.2.3:30000", False),
        ("http://192.168.0.7:30000", False),
        ("http://0.0.0.0:30000", False),
        ("http://[2001:db8::1]:30000", False),
        ("https://128.0.0.1", False),
    ],
)
async def test_is_loopback(url, expected):
    assert await is_loopback(url) is expected


def tui_config(*argv: str):
    return build_config(make_parser().parse_args(["tui", "--server", "127.0.0.1:1", *argv]))


def test_yes_flush_flag_and_config_key(tmp_path):
    assert tui_config().yes_flush is False
    assert tui_config("--yes-flush").yes_flush is True
    path = tmp_path / "cfg.yaml"
    path.write_text("yes_flush: true\n")
    assert tui_config("--config", str(path)).yes_flush is True
    # how the TUI asks is not part of what a run measured: not recorded
    assert "yes_flush" not in tui_config("--yes-flush").to_record()
    path.write_text("samples: 4\nyes_flush: 1\n")
    with pytest.raises(ConfigError, match=r"cfg.yaml:2: 'yes_flush' must be true or false"):
        load_config_file(str(path))


def test_check_never_asks_so_it_takes_no_flag():
    with pytest.raises(SystemExit) as e:
        make_parser().parse_args(["check", "--server", "127.0.0.1:1", "--yes-flush"])
    assert e.value.code == 2
