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


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        # without the check, 'http' was the host and '//127.0.0.1:5' its path
        ("http//127.0.0.1:5", "(did you mean http://127.0.0.1:5?)"),
        ("https:/gpu:8", "(did you mean https://gpu:8?)"),
        ("http://127.0.0.1:5/v1", "a path ('/v1') is not expected: give http://127.0.0.1:5"),
        ("gpu:8/generate", "a path ('/generate') is not expected: give http://gpu:8"),
        ("http://gpu:8/?x=1", "a path ('/?x=1') is not expected"),
    ],
)
def test_an_address_with_a_path_is_refused_in_one_line(spec, said):
    with pytest.raises(UsageError) as e:
        sglang_url(spec)
    assert str(e.value).startswith(f"--server {spec!r}: ") and said in str(e.value)
    assert "\n" not in str(e.value)


def test_a_config_files_servers_and_baseline_are_checked_by_name(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("servers: ['http//127.0.0.1:5']\n")
    with pytest.raises(UsageError, match=r"c\.yaml: servers 'http//127\.0\.0\.1:5': .*did you"):
        build_config(make_parser().parse_args(["check", "--config", str(cfg)]))
    args = ["check", "--server", "h:1", "--baseline", "http://h:2/v1"]
    with pytest.raises(UsageError, match=r"^--baseline 'http://h:2/v1': a path \('/v1'\)"):
        build_config(make_parser().parse_args(args))


def test_the_command_line_refuses_it_before_any_request(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "kltui", "check", "--server", "http//127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "did you mean http://127.0.0.1:9?" in lines[0], out.stderr
