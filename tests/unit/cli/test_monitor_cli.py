"""`kltui monitor`'s command line: durations, the /metrics address (loopback unless
--prometheus-public) and the one-line errors for bad values, before anything starts."""

from __future__ import annotations

import argparse

import pytest

from kltui.cli.commands import main
from kltui.cli.monitor import duration_arg
from kltui.errors import UsageError
from kltui.outputs.prometheus import parse_listen


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 30.0), ("30s", 30.0), ("5m", 300.0), ("1.5h", 5400.0), ("1d", 86400.0), ("0", 0.0)],
)
def test_durations(text, seconds):
    assert duration_arg(text) == seconds


@pytest.mark.parametrize("text", ["", "5 min", "-1s", "1w", "s"])
def test_bad_durations(text):
    with pytest.raises(argparse.ArgumentTypeError):
        duration_arg(text)


def test_metrics_bind_to_loopback_unless_asked():
    assert parse_listen("9464", public=False) == ("127.0.0.1", 9464)
    assert parse_listen("localhost:9464", public=False) == ("localhost", 9464)
    assert parse_listen("[::1]:9464", public=False) == ("::1", 9464)
    with pytest.raises(UsageError, match="not a loopback address; add --prometheus-public"):
        parse_listen("0.0.0.0:9464", public=False)
    assert parse_listen("0.0.0.0:9464", public=True) == ("0.0.0.0", 9464)
    with pytest.raises(UsageError, match="give PORT or HOST:PORT"):
        parse_listen("127.0.0.1:99999", public=False)


def test_bad_options_are_one_line_before_anything_starts(capsys):
    assert main(["monitor", "--server", "127.0.0.1:9", "--prometheus", "10.0.0.1:9464"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--prometheus '10.0.0.1:9464'" in err
    with pytest.raises(SystemExit) as e:
        main(["monitor", "--server", "127.0.0.1:9", "--every", "soon"])
    assert e.value.code == 2
    assert "a duration like 30s, 5m or 1h, got 'soon'" in capsys.readouterr().err
    assert main(["monitor"]) == 2
    assert "monitor needs --server" in capsys.readouterr().err
