"""`kltui ablate` with a configuration that never becomes healthy, and one whose port is taken
between the check and the launch, twice (issue 29, bad input and faults): one line naming it
with its log's last lines, its server stopped, the configurations before and after it measured. The base and the stalling server are the reference server behind
`stalling_reference.py` (its `--stall-s` flag, listed in its --help, makes it hang)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from kltui.cli.commands import main
from tests.integration.test_ablate import SIZES, _with_marker
from tests.json_contract import read_json

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

STALLING = Path(__file__).with_name("stalling_reference.py")
# long enough for a loaded 2-core machine to start the reference server (~15 s seen), short
# enough to keep the test under two minutes
START_TIMEOUT = "45"


def test_a_configuration_that_never_becomes_healthy_is_one_line_and_the_sweep_goes_on(
    tmp_path, capsys
):
    marker = str(600_000_000 + os.getpid())  # a --random-seed no other server uses
    code = main(
        [
            "ablate", "--headless",
            "--launch", f"{sys.executable} {STALLING} --dtype bfloat16 --random-seed {marker}",
            "--vary", "--stall-s=600", "--vary", "deterministic=on",
            "--start-timeout", START_TIMEOUT, "--helpers", "match",
            "--json", str(tmp_path / "t.json"), *SIZES, "--folder", str(tmp_path / "sweep"),
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "t.json", "ablation")
    runs = doc["sweep"]["configs"]
    assert [r["status"] for r in runs] == ["measured", "failed", "measured"], out[-2000:]
    stalled = runs[1]
    assert stalled["error_kind"] == "timeout"
    line = stalled["error"]
    assert line.startswith(f"{stalled['name']}: not healthy after {START_TIMEOUT} s; log ")
    assert line.endswith("stalling for 600 s before starting")  # the log's last line
    assert [ln for ln in out.splitlines() if ln.startswith("failed: ")] == [f"failed: {line}"] * 2
    # what the server took to fail is start time, not kltui's
    assert stalled["start_s"] >= float(START_TIMEOUT)
    assert doc["ablation"]["verdict"]["kind"] == "localized" and code == 0
    assert not _with_marker(marker)  # the stalled server was stopped with the others


def test_a_port_taken_between_the_check_and_the_launch_twice_is_one_line(
    tmp_path, capsys, monkeypatch
):
    import itertools
    import socket

    from kltui.launch import server as launch_server

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    real = launch_server.free_port
    calls = itertools.count(1)
    # the base gets a free port; the second configuration is handed the taken one at both of
    # its attempts (the check said free, then something else bound it); the third a free one
    monkeypatch.setattr(
        launch_server,
        "free_port",
        lambda host="127.0.0.1": port if next(calls) in (2, 3) else real(host),
    )
    try:
        code = main(
            [
                "ablate", "--headless", "--launch", f"{sys.executable} -m kltui.reference serve "
                "--dtype bfloat16", "--vary", "cuda-graph=off", "--vary", "deterministic=on",
                "--helpers", "match", "--json", str(tmp_path / "p.json"), *SIZES,
                "--folder", str(tmp_path / "sweep"),
            ]
        )  # fmt: skip
    finally:
        taken.close()
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "p.json", "ablation")
    runs = doc["sweep"]["configs"]
    assert [r["status"] for r in runs] == ["measured", "failed", "measured"], out[-2000:]
    assert runs[1]["error_kind"] == "port"
    line = runs[1]["error"]
    assert line.startswith(
        f"cuda-graph=off: port {port} was taken before the server could bind it, twice; log "
    ), line
    assert "address already in use" in line.lower()  # the server's own words, from its log
    assert f"failed: {line}" in out.splitlines()
    assert doc["ablation"]["verdict"]["kind"] == "localized" and code == 0
