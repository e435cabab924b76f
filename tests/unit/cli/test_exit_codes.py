"""Exit codes are decided once (kltui/errors.py): a session's verdicts and the exceptions that
end a command map onto the documented codes the same way on every front end."""

from __future__ import annotations

import pytest

from kltui import errors
from kltui.cli import main


@pytest.mark.parametrize(
    "verdicts, interrupted, code",
    [
        (["pass"], False, 0),
        (["pass", "fail"], False, 1),
        (["fail", "error"], False, 3),
        (["pass", None], False, 3),  # a run that never finished is an error
        ([], False, 3),  # no run at all: nothing was measured
        (["pass", "interrupted"], False, 130),
        (["pass"], True, 130),  # Ctrl-C wins over any verdict
        ([], True, 130),
    ],
)
def test_session_exit(verdicts, interrupted, code):
    assert errors.session_exit(verdicts, interrupted=interrupted) == code


def test_exception_exit():
    assert errors.exception_exit(KeyboardInterrupt()) == 130
    assert errors.exception_exit(errors.UsageError("x")) == 2
    assert errors.exception_exit(ConnectionRefusedError()) == 3
    assert errors.exception_exit(ValueError("a bug")) is None
    assert (errors.passed_exit(True), errors.passed_exit(False)) == (0, 1)


def test_ctrl_c_in_kltui_web_is_130(monkeypatch, capsys):
    # textual-serve's serve() ends with KeyboardInterrupt on Ctrl-C (it was exit 0)
    import kltui.cli.web as web

    def serve(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(web, "main", serve)
    assert main(["web", "--port", "1"]) == 130
    assert capsys.readouterr().err == ""  # Ctrl-C is not an error to print


def test_usage_error_in_kltui_web_is_2(monkeypatch, capsys):
    import kltui.cli.web as web

    def serve(argv):
        raise errors.UsageError("--port 1: refused")

    monkeypatch.setattr(web, "main", serve)
    assert main(["web"]) == 2
    assert capsys.readouterr().err == "kltui: error: --port 1: refused\n"
