"""Server strings are data, never markup or terminal control; the API key never leaves the
Authorization header (not in output, recordings or JSON), even when a hostile server echoes
it back in an error body or in its /server_info."""

from __future__ import annotations

import re

import pytest

from tests.hostile.harness import (
    assert_clean_output,
    check_cli,
    check_inproc,
    cli_env,
    fault_line,
)

# Rich markup, an emoji code, a terminal title escape (OSC), a CSI colour, a bidi override
# and a bare carriage return: each would change what the terminal shows if printed raw.
HOSTILE = "[bold red]pwn[/] :warning: \x1b]0;owned\x07 \x1b[31mred \u202eevil\r over"
RAW = ["\x1b", "\x07", "\u202e", "\r", "⚠"]
LITERAL = ["[bold red]pwn[/]", ":warning:", "\\x1b]0;owned\\x07", "\\x1b[31mred", "\\u202e"]
SECRET = "sk-hostile-3f9c2a7b11d04e6d"


def assert_inert(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} reached the output"
    for lit in LITERAL:
        assert lit in text, f"{lit!r} is not shown literally:\n{text}"


async def test_server_identity_strings_are_shown_literally(hostile, tmp_path):
    srv = hostile(model_path=f"/models/{HOSTILE}", extra_info={"version": HOSTILE})
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == 0, res.out
    (line,) = [ln for ln in res.out.splitlines() if ln.startswith(srv.url)]
    assert_inert(line)
    assert_inert(res.recording.events[0].servers[0]["model_path"])
    assert res.report["servers"][0]["version"].count("\\x1b") == 2


async def test_error_bodies_are_shown_literally(hostile, tmp_path):
    srv = hostile(fault="http-error", phase="prefill", error_message=HOSTILE)
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == 3
    line = fault_line(res, srv.url, "prefill", r"answered HTTP 500: \[bold red\]pwn")
    assert_inert(line)


async def test_stream_error_events_are_shown_literally(hostile, tmp_path):
    srv = hostile(fault="stream-error", phase="decode", error_message=HOSTILE)
    res = await check_inproc(srv.url, tmp_path)
    assert res.rc == 3
    assert_inert(fault_line(res, srv.url, "decode", r"error event after 2 events"))


def test_server_strings_through_the_cli(hostile, tmp_path):
    """The real console (emoji and markup on by default in Rich) must not interpret them."""
    srv = hostile(
        model_path=f"/models/{HOSTILE}",
        fault="http-error",
        phase="decode",
        error_message=HOSTILE,
    )
    res = check_cli(srv.address, tmp_path)
    assert res.rc == 3
    assert_clean_output(res)
    (server_line,) = [ln for ln in res.out.splitlines() if ln.startswith(srv.url)]
    assert_inert(server_line)
    assert_inert(fault_line(res, srv.url, "decode", r"answered HTTP 500"))


ECHO_PHASES = ["health", "server_info", "flush", "tokenize", "decode", "prefill"]


def assert_key_hidden(res, srv, phase: str) -> None:
    # the key was really sent, and really echoed back
    assert srv.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert res.rc == 3, res.out
    assert_clean_output(res)
    assert SECRET not in res.out
    for f in ("r.json", "r.kltui.jsonl"):
        assert SECRET.encode() not in (res.path / f).read_bytes(), f
    kltui_phase = "connect" if phase in ("health", "server_info") else phase
    assert "Bearer <redacted>" in fault_line(res, srv.url, kltui_phase, "")
    if kltui_phase != "connect":
        assert res.report["servers"][0]["model_path"] == "/models/<redacted>"


@pytest.mark.parametrize("phase", ECHO_PHASES)
@pytest.mark.parametrize("how", ["option", "env"])
async def test_api_key_never_leaves_the_header(phase, how, hostile, tmp_path, monkeypatch):
    # the server also puts the key in model_path, for the phases after connect to see
    srv = hostile(fault="echo-auth", phase=phase, times=0, model_path=f"/models/{SECRET}")
    if how == "env":
        monkeypatch.setenv("KLTUI_API_KEY", SECRET)
        res = await check_inproc(srv.url, tmp_path)
    else:
        res = await check_inproc(srv.url, tmp_path, api_key=SECRET)
    assert_key_hidden(res, srv, phase)
    assert res.report["config"]["api_key_set"] is True  # used, and said so, but not written


@pytest.mark.parametrize("how, phase", [("option", "prefill"), ("env", "health")])
def test_api_key_never_leaves_the_header_through_the_cli(how, phase, hostile, tmp_path):
    srv = hostile(fault="echo-auth", phase=phase, times=0, model_path=f"/models/{SECRET}")
    if how == "option":
        res = check_cli(srv.address, tmp_path, extra=["--api-key", SECRET])
    else:
        res = check_cli(srv.address, tmp_path, env=cli_env(KLTUI_API_KEY=SECRET))
    assert_key_hidden(res, srv, phase)


def test_a_key_cut_by_the_length_limit_is_still_redacted(hostile, tmp_path):
    """Redaction happens before messages are shortened, so no prefix of the key survives."""
    srv = hostile(fault="echo-auth", phase="prefill", error_message=None)
    long_key = "k" * 40 + SECRET + "z" * 300
    res = check_cli(srv.address, tmp_path, extra=["--api-key", long_key])
    assert res.rc == 3
    assert not re.search(r"k{20}", res.out), res.out
    assert "<redacted>" in res.out
