"""`kltui demo --help` states the prompt lengths the demo really sends (issue 33: it said
"~192 tokens", the --max-prompt-tokens default, while no built-in prompt is that long)."""

from __future__ import annotations

from kltui.cli.commands import make_parser
from kltui.cli.options import DEMO_SIZES
from kltui.reference.tokenizer import TextTokenizer
from kltui.run.builtin_prompts import PROMPTS


def test_demo_help_says_how_long_its_prompts_are(capsys):
    import kltui.reference

    folder = f"{kltui.reference.__path__[0]}/checkpoint"
    tok = TextTokenizer(folder)
    lengths = [len(tok.encode(p)) for p in PROMPTS[: DEMO_SIZES["samples"]]]
    demo = make_parser()._subparsers._group_actions[0].choices["demo"]
    text = " ".join(demo.format_help().split())
    assert (
        f"{DEMO_SIZES['samples']} built-in prompts of {min(lengths)}-{max(lengths)} tokens" in text
    )
    assert max(lengths) <= DEMO_SIZES["max_prompt_tokens"] // 2  # the shortest possible cut
