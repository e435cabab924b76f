"""`kltui web` command line: what each browser tab runs, checked before serving, and the
warning when the dashboard is reachable from other machines."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import orjson
import pytest

from kltui.cli import main
from kltui.cli.web import app_argv, is_loopback, warning
from kltui.errors import UsageError
from tests.reports.synth import HelperSpec, record, run_events


def test_the_served_command_defaults_to_the_live_dashboard():
    argv = app_argv(["--server", "127.0.0.1:30000", "--samples", "4"], read_only=True)
    assert argv == ["tui", "--server", "127.0.0.1:30000", "--samples", "4", "--read-only"]
    assert app_argv(["demo", "--deterministic"], read_only=False) == ["demo", "--deterministic"]


def test_replay_without_a_file_serves_the_newest_recording(tmp_path, monkeypatch):
    monkeypatch.setenv("KLTUI_RUNS_DIR", str(tmp_path))
    path = record(tmp_path / "run-1.kltui.jsonl", run_events([HelperSpec("match")]))
    assert app_argv(["replay"], read_only=True) == ["replay", path, "--read-only"]


SWEEP = Path(__file__).parents[2] / "tui" / "data" / "sweep"  # a real reference-server sweep


def test_a_sweep_folder_is_served_and_replay_defaults_to_the_newest_entry(tmp_path, monkeypatch):
    # it read every path as a recording, so a kltui ablate folder failed as "not a recording"
    # and `replay` alone never chose a sweep (issue 29)
    monkeypatch.setenv("KLTUI_RUNS_DIR", str(tmp_path))
    record(tmp_path / "run-1.kltui.jsonl", run_events([HelperSpec("match")]))
    sweep = tmp_path / "ablate-1"
    shutil.copytree(SWEEP, sweep)
    os.utime(sweep / "ablation.json")
    doc = orjson.loads((sweep / "ablation.json").read_bytes())
    doc["created"] = time.time() + 60  # newer than the recording
    (sweep / "ablation.json").write_bytes(orjson.dumps(doc))
    assert app_argv(["replay", str(sweep)], read_only=True) == ["replay", str(sweep), "--read-only"]
    assert app_argv(["replay"], read_only=False) == ["replay", str(sweep)]


def test_a_folder_that_is_not_a_sweep_is_refused_before_serving(tmp_path):
    with pytest.raises(UsageError, match="no sweep manifest"):
        app_argv(["replay", str(tmp_path)], read_only=False)


def test_a_served_sweep_opens_its_matrix_though_its_pipes_are_no_terminal(monkeypatch):
    # textual-serve runs each tab's kltui with pipes and Textual's web driver; the console's
    # table there would leave the browser tab blank
    import argparse

    from kltui.cli.terminal import use_tui

    args = argparse.Namespace(headless=False, json=None, md=None, junit=None, html=None)
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert not use_tui(args)
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    assert use_tui(args)
    args.headless = True
    assert not use_tui(args)


@pytest.mark.parametrize(
    ("rest", "message"),
    [
        (["check", "--server", "127.0.0.1:1"], "kltui web serves tui, demo, replay; not 'check'"),
        (["demo", "--headless"], "--headless has no dashboard to serve"),
        ([], "give --server HOST:PORT, or serve `demo` or `replay`"),
    ],
)
def test_what_cannot_be_served_fails_before_serving(rest, message):
    with pytest.raises(UsageError, match="^" + message.replace("(", r"\(")):
        app_argv(rest, read_only=False)


def test_bad_recording_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "x.kltui.jsonl"
    bad.write_text("nope\n")
    assert main(["web", "replay", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"kltui: error: {bad}:1: not a kltui recording (header is not JSON)"
    )


def test_exposing_it_warns_that_anyone_can_rerun():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert warning("127.0.0.1", "http://127.0.0.1:8000", read_only=False) is None
    # beyond this machine: a warning naming the URL, another one when read-only (their
    # words: tests/unit/words/test_golden_web_warning.py)
    note = warning("0.0.0.0", "http://box:8000", read_only=False)
    ro = warning("0.0.0.0", "http://box:8000", read_only=True)
    assert note is not None and ro is not None and note != ro
    assert "http://box:8000" in note and "http://box:8000" in ro


def test_without_textual_serve_the_hint_names_this_checkout(monkeypatch, capsys):
    import builtins
    from pathlib import Path

    import kltui

    real_import = builtins.__import__

    def no_web(name, *args, **kw):
        if name == "kltui.cli.web_serve":
            raise ImportError(name)
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_web)
    root = Path(kltui.__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    assert main(["web", "demo"]) == 2
    assert "kltui web needs textual-serve: pip install -e '.[web]'" in capsys.readouterr().err
    monkeypatch.chdir(root / "tests")
    assert main(["web", "demo"]) == 2
    assert f"pip install -e '{root}[web]'" in capsys.readouterr().err


@pytest.mark.parametrize("verbose", [False, True])
def test_the_access_log_is_quiet_unless_verbose(verbose):
    import logging

    from kltui.cli.web_serve import StoppingServer

    access = logging.getLogger("aiohttp.access")
    was = access.level
    try:
        StoppingServer("true", verbose=verbose).initialize_logging()
        assert access.isEnabledFor(logging.INFO) is verbose
    finally:
        access.setLevel(was)


def test_the_console_rule_is_one_for_every_command(monkeypatch, capsys):
    # issue 46: demo, the bare kltui and replay follow ablate's rule (kltui/cli/terminal.py)
    from kltui.cli.parser import make_parser
    from kltui.cli.terminal import headless_note, use_tui
    from kltui.words.no_dashboard import NoDashboard, no_dashboard_note

    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    parse = make_parser().parse_args
    assert use_tui(parse(["demo"])) and use_tui(parse(["replay", "x"]))
    assert not use_tui(parse(["demo", "--headless"]))
    assert not use_tui(parse(["demo", "--json", "-"]))
    headless_note("kltui demo", parse(["demo", "--headless"]))  # asked for: nothing to explain
    assert capsys.readouterr().err == ""
    headless_note("kltui demo", parse(["demo", "--md", "-"]))
    assert capsys.readouterr().err == (
        no_dashboard_note("kltui demo", NoDashboard.REPORT_TO_STDOUT) + "\n"
    )  # golden: tests/unit/words/test_golden_no_dashboard.py
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    assert not use_tui(parse(["demo"])) and not use_tui(parse(["replay", "x"]))
