"""The settings of a stateful model's run (issue 57), declared as run/settings.py declares every
RunConfig field (it merges these): the model's config.json when the server's model path is not
readable here, and the rule that counts a cache hit."""

from __future__ import annotations

from kltui.run.settings_model import STRING_OR_NULL, Setting, YamlKey, flag, ref

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
}
