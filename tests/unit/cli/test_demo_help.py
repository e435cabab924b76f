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


def _demo_parser():
    return make_parser()._subparsers._group_actions[0].choices["demo"]


def test_demo_takes_every_fault_the_reference_server_plants(capsys):
    # it listed only stale-prefix and window-evict, so `kltui demo --stress light --fault
    # batch-switch:4` was refused although the server plants it (issue 32)
    from kltui.reference.faults import FAULTS

    demo = _demo_parser()
    for spec in ("kv-corrupt-after:24", "batch-switch:4", "stale-prompt-logprobs"):
        assert demo.parse_args(["--fault", spec]).fault == spec
    text = " ".join(demo.format_help().split())
    # argparse wraps the help at hyphens ("chunk- boundary"): join them back
    assert all(f in text.replace("- ", "-") for f in FAULTS)


def test_demo_refuses_an_unknown_fault_in_one_line(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        _demo_parser().parse_args(["--fault", "bogus"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "unknown fault 'bogus'" in err and "evict-under-pressure" in err
    assert "Traceback" not in err
