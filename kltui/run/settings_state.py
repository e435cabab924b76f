"""The settings of a stateful model's run (issue 57), declared as run/settings.py declares every
RunConfig field (it merges these): the model's config.json when the server's model path is not
readable here, and the rule that counts a cache hit."""

from __future__ import annotations

from kltui.metrics.hit_rules import HitRule
from kltui.run.settings_model import STRING_OR_NULL, Setting, YamlKey, flag, ref

HIT_RULES = tuple(str(r) for r in HitRule)

STATE_SETTINGS = {
    "model_config": Setting(
        ref(STRING_OR_NULL),
        YamlKey("model_config", (str,), "a config.json path (or the folder holding one)"),
        (
            flag(
                "--model-config",
                "the model's config.json (or its folder) when the server's model path is not "
                "readable here: its Mamba chunk, sliding window and experts (the state geometry)",
                metavar="PATH",
            ),
        ),
    ),
    "hit_rule": Setting(
        {"enum": [*HIT_RULES, None]},  # null: a recording older than the option
        YamlKey(
            "hit_rule",
            (str,),
            f"one of {', '.join(HIT_RULES)}",
            lambda v: v in HIT_RULES,
        ),
        (
            flag(
                "--hit-rule",
                "what counts as a cache hit: engine (default; on a Mamba server, a hit on the "
                "state checkpoint SGLang's kl_multiturn_utils accepts) or kl_test_utils "
                "(cached_tokens > 0, > len(turn 1) + 1, on every server: for parity)",
                choices=HIT_RULES,
            ),
        ),
    ),
}
