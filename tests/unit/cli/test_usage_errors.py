"""A bad command line prints its one message first and a one-line hint, never the whole usage
(issue 21 item 6)."""

from __future__ import annotations

import pytest

from kltui.cli.commands import main


@pytest.mark.parametrize(
    ("argv", "first"),
    [
        (["check", "--samples", "0"], "kltui check: error: argument --samples: must be > 0: '0'"),
        (
            ["check", "--max-new-tokens", "-1"],
            "kltui check: error: argument --max-new-tokens: must be > 0: '-1'",
        ),
        (
            ["check", "--threshold", "abc"],
            "kltui check: error: argument --threshold: not a number: 'abc'",
        ),
        (["--samples", "0"], "kltui tui: error: argument --samples: must be > 0: '0'"),
        (["check", "--bogus"], "kltui check: error: unrecognized arguments: --bogus"),
        (
            ["dumps", "analyze"],
            "kltui dumps analyze: error: the following arguments are required: DIR_A, DIR_B",
        ),
        (["web", "--port", "x"], "kltui web: error: argument --port: invalid int value: 'x'"),
        # issue 59: a mistyped command is named with the nearest one, not "tui: unrecognized"
        (
            ["chek", "--server", "127.0.0.1:30000"],
            "kltui: error: unknown command 'chek' (did you mean check?)",
        ),
        (["replya"], "kltui: error: unknown command 'replya' (did you mean replay?)"),
        (
            ["frobnicate"],
            "kltui: error: unknown command 'frobnicate' (the commands: ablate, check, demo, "
            "dumps, import, monitor, probe-ops, replay, report, runs, serve-reference, tui, web)",
        ),
    ],
)
def test_the_message_comes_first_and_usage_is_one_line(capsys, argv, first):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and lines[0] == first
    assert len(lines) == 2 and "--help" in lines[1], err


def test_help_still_prints_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: kltui check") and "--max-new-tokens" in out


def _subcommands() -> list[str]:
    import argparse

    from kltui.cli.parser import make_parser

    (sub,) = [a for a in make_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(sub.choices)


@pytest.mark.parametrize("command", _subcommands())
def test_every_subcommand_prints_its_help(command, capsys):
    # argparse %-formats every help string: one stray "%" breaks --help with a traceback
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: kltui {command}")
