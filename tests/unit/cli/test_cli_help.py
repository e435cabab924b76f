"""`--help` says what a command does: every option explains itself, and the demo's help states
the sizes the demo really runs with."""

from __future__ import annotations

import argparse
import re

from kltui.cli.handlers import demo_config
from kltui.cli.options import DEMO_SIZES
from kltui.cli.parser import make_parser


def subparsers() -> dict[str, argparse.ArgumentParser]:
    p = make_parser()
    (sub,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


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
    assert f"tokens decoded per sample ({cfg.max_new_tokens})" in text
    assert f"[0.5, 1.5] x N tokens ({cfg.max_prompt_tokens})" in text
    assert f"number of prompts ({cfg.samples})" in text
    assert "(512)" not in text and "(3000)" not in text
    # an explicit value still wins over the demo's size
    cfg = demo_config(demo.parse_args(["--max-new-tokens", "7"]), "http://127.0.0.1:1")
    assert cfg.max_new_tokens == 7


def test_check_help_states_the_run_defaults():
    from kltui.run.config import RunConfig

    text = " ".join(subparsers()["check"].format_help().split())
    cfg = RunConfig()
    assert f"tokens decoded per sample ({cfg.max_new_tokens})" in text
    assert re.search(rf"x N tokens \({cfg.max_prompt_tokens}\)", text)


def test_theme_and_page_size_help():
    subs = subparsers()
    for name in ("tui", "demo", "replay"):
        (theme,) = [a for a in subs[name]._actions if "--theme" in a.option_strings]
        assert "kltui-dark" in theme.help and "kltui-cb" in theme.help
    (page,) = [a for a in subs["demo"]._actions if "--page-size" in a.option_strings]
    assert "page size" in page.help
