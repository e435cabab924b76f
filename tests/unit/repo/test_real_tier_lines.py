"""The real-engine tier says when each real server starts and stops, on the terminal even under
`pytest -q` (issue 21 item 8): twenty minutes of dots looked like a hang."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.real import launch


def test_each_start_and_stop_is_announced(monkeypatch):
    calls = []

    def fake_script(*args, timeout, env=None):
        calls.append(args)
        out = "http://127.0.0.1:41234\n" if args[0] == "start" else ""
        return subprocess.CompletedProcess(args, 0, out, "")

    monkeypatch.setattr(launch, "script", fake_script)
    lines: list[str] = []
    servers = launch.Servers(lines.append)
    assert servers.get("sglang", "sglang", "--api-key", "k") == "http://127.0.0.1:41234"
    servers.get("sglang", "sglang")  # already up: no second start, no line
    servers.stop_all()
    assert [c[0] for c in calls] == ["start", "stop"]
    assert len(lines) == 3, lines
    assert lines[0].startswith("[real] sglang: starting sglang --api-key k")
    assert lines[1].startswith("[real] sglang: up at http://127.0.0.1:41234 in ")
    assert lines[2].startswith("[real] sglang: stopped (http://127.0.0.1:41234) in ")


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["serial", "xdist"])
def test_say_reaches_the_terminal_under_q_with_capture(tmp_path, workers):
    """`say` writes through pytest's terminal reporter, past output capture; on a pytest-xdist
    worker (README's command), whose reporter nobody reads, to the terminal's stderr."""
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent(
            """
            from tests.real.launch import say

            def test_x(pytestconfig):
                print("captured, not shown")
                say(pytestconfig, "[real] sglang: starting sglang")
            """
        )
    )
    root = launch.REPO
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         *workers, str(tmp_path / "test_x.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[real] sglang: starting sglang" in (proc.stderr if workers else proc.stdout)
    assert "captured, not shown" not in proc.stdout + proc.stderr
