"""`--server HOST` without a port means SGLang's default port 30000 (not http's 80), and
kltui says so; anything with a port or a scheme is taken as written."""

from __future__ import annotations

import pytest

from kltui.cli.commands import make_parser
from kltui.cli.options import build_config
from kltui.engines.http import sglang_url
from kltui.errors import UsageError


@pytest.mark.parametrize(
    ("spec", "url"),
    [
        ("localhost", "http://localhost:30000"),
        (" gpu-box.lan ", "http://gpu-box.lan:30000"),
        ("[::1]", "http://[::1]:30000"),
        ("localhost:8080", "http://localhost:8080"),
        ("http://localhost", "http://localhost"),  # a URL is taken as written
        ("https://proxy.example/", "https://proxy.example"),
    ],
)
def test_sglang_url(spec, url):
    got, note = sglang_url(spec)
    assert got == url
    if url.endswith(":30000"):
        assert note == f"--server {spec.strip()}: no port given, using SGLang's default: {url}"
    else:
        assert note is None


def test_a_bare_host_is_port_30000_and_kltui_says_so(capsys):
    cfg = build_config(make_parser().parse_args(["check", "--server", "localhost"]))
    assert cfg.servers == ["http://localhost:30000"]
    err = capsys.readouterr().err
    assert "no port given, using SGLang's default: http://localhost:30000" in err


def test_a_bad_address_is_still_a_usage_error():
    with pytest.raises(UsageError, match="the port is not a number"):
        sglang_url("localhost:http")
