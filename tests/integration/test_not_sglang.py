"""Issue 59's first hour: a server that is not SGLang (Python's own `http.server`, started here
on 127.0.0.1) answers SGLang's routes with web pages. `kltui check` says so in one line, "not
an SGLang server (/health answered 404, an HTML page)", exit 3, without the page's markup and
without retrying an answer that will not change."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kltui.cli import main
from kltui.errors import EXIT_SERVER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def web_server(tmp_path):
    """`python -m http.server` serving `tmp_path` on 127.0.0.1; its address."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def _error_lines(capsys) -> list[str]:
    out = capsys.readouterr()
    text = out.out + out.err
    assert "<" not in text and "Traceback" not in text, text
    return [line for line in text.splitlines() if line.startswith("error: ")]


def test_a_web_server_is_not_an_sglang_server(web_server, capsys):
    t0 = time.monotonic()
    code = main(["check", "--server", web_server, "--no-record", "--samples", "2"])
    took = time.monotonic() - t0
    (line,) = _error_lines(capsys)
    assert line == (
        f"error: http://{web_server}: not an SGLang server (/health answered 404, an HTML page) "
        "(phase: connect)"
    )
    assert code == EXIT_SERVER
    assert took < 1.5, took  # a page that will not change is not retried with backoff


def test_a_web_page_where_server_info_should_be(web_server, tmp_path: Path, capsys):
    (tmp_path / "health").write_text("ok")  # /health answers 200, as a file
    # a page served as a file (no text/html type): its markup still tells
    (tmp_path / "server_info").write_text("<!DOCTYPE html><html><body>hi</body></html>")
    code = main(["check", "--server", web_server, "--no-record", "--samples", "2"])
    (line,) = _error_lines(capsys)
    assert "not an SGLang server (/server_info answered 200, an HTML page)" in line, line
    assert code == EXIT_SERVER
