"""`--help` says what a command does: every option explains itself, and the demo's help states
the sizes the demo really runs with."""

from __future__ import annotations

import argparse

from kltui.cli.handlers import demo_config
from kltui.cli.options import DEMO_SIZES
from kltui.cli.parser import make_parser


def subparsers() -> dict[str, argparse.ArgumentParser]:
    p = make_parser()
    (sub,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def help_of(parser: argparse.ArgumentParser, key: str) -> str:
    """The help of the option that sets `key` (`--max-new-tokens` for max_new_tokens), on one
    line as format_help shows it."""
    flag = "--" + key.replace("_", "-")
    (action,) = [a for a in parser._actions if flag in a.option_strings]
    return " ".join((action.help or "").split())


def test_every_option_of_every_command_has_a_help_text():
    missing = [
        f"{name} {'/'.join(a.option_strings) or a.dest}"
        for name, sp in subparsers().items()
        for a in sp._actions
        if not a.help and not isinstance(a, argparse._SubParsersAction)
    ]
    assert missing == []


def test_demo_help_states_the_sizes_the_demo_runs_with():
    demo = subparsers()["demo"]
    text = " ".join(demo.format_help().split())
    cfg = demo_config(demo.parse_args([]), "http://127.0.0.1:1")
    ran = {k: getattr(cfg, k) for k in DEMO_SIZES}
    assert ran == {"samples": 32, "max_new_tokens": 64, "max_prompt_tokens": 192}
    for key in DEMO_SIZES:  # each size's own option says it, and --help shows that
        said = help_of(demo, key)
        assert f"({getattr(cfg, key)})" in said and said in text
    assert "(512)" not in text and "(3000)" not in text
    # an explicit value still wins over the demo's size
    cfg = demo_config(demo.parse_args(["--max-new-tokens", "7"]), "http://127.0.0.1:1")
    assert cfg.max_new_tokens == 7


def test_check_help_states_the_run_defaults():
    from kltui.run.config import RunConfig

    check = subparsers()["check"]
    text = " ".join(check.format_help().split())
    cfg = RunConfig()
    for key in DEMO_SIZES:
        said = help_of(check, key)
        assert f"({getattr(cfg, key)})" in said and said in text


def test_theme_and_page_size_help():
    subs = subparsers()
    for name in ("tui", "demo", "replay"):
        (theme,) = [a for a in subs[name]._actions if "--theme" in a.option_strings]
        assert "kltui-dark" in theme.help and "kltui-cb" in theme.help
    (page,) = [a for a in subs["demo"]._actions if "--page-size" in a.option_strings]
    assert "page size" in page.help
