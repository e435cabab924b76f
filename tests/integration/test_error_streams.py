"""Where `kltui check` prints a server error (issue 46 item 5): usage errors went to stderr and
server errors to stdout beside the verdict. A fatal problem goes to stderr; the results and the
verdict line stay on stdout, so a script reading stdout gets the verdict and its log the error."""

from __future__ import annotations

import io

from rich.console import Console

from kltui.cli import main
from kltui.console import error_console, make_console
from tests.hostile.server import refused_url


def test_a_server_error_goes_to_stderr_and_the_verdict_to_stdout(capsys, fast_backoff):
    url = refused_url()
    code = main(["check", "--server", url, "--no-record"])
    out, err = capsys.readouterr()
    assert code == 3
    (line,) = [x for x in err.splitlines() if x.startswith("error: ")]
    assert url in line and "cannot connect for /health" in line, err
    assert "error: " not in out and "cannot connect" not in out, out
    assert out.splitlines()[-1] == "verdict: error", out
    assert "verdict" not in err, err


def test_a_console_given_a_buffer_keeps_its_errors():
    buf = Console(file=io.StringIO())
    assert error_console(buf) is buf  # a caller collecting the output gets all of it
    assert error_console(make_console()).stderr
