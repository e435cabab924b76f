"""Threshold presets: the values SGLang's own CI gates on, and the bit-exact deterministic floor.

Sources: sglang test/registered/*: KLDivergenceMixin users (0.5.23); see docs/THRESHOLDS.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

DETERMINISTIC_KL_DIV = 1e-9  # the Inkling deterministic tests gate at 1e-9: any nonzero is a bug
DEFAULT_KL_DIV = 0.002  # the value most KLDivergenceMixin users in SGLang CI choose

# (model, tp, kl_div, kl_div_prefill, kl_div_decode)
_SGLANG_CI = [
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 4, 0.002, None, None),
    ("moonshotai/Kimi-Linear-48B-A3B-Instruct", 2, 0.002, None, None),
    ("openai/gpt-oss-20b", None, 0.02, None, None),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", None, 0.005, 0.012, None),
    ("ibm-granite/granite-4.0-h-micro", None, 0.002, 0.02, None),
]

PRESETS: dict[str, list[dict]] = {
    "sglang-ci": [
        {"model": m, "tp": tp, "kl_div": kl, "kl_div_prefill": kp, "kl_div_decode": kd}
        for m, tp, kl, kp, kd in _SGLANG_CI
    ],
    "deterministic": [{"model": "*", "tp": None, "kl_div": DETERMINISTIC_KL_DIV}],
}


@dataclass(frozen=True)
class ThresholdSource:
    """Where a helper's kl_div threshold came from, typed: who chose it decides what it gates."""

    # "flag" (--threshold), "config" (a config file's thresholds entry), "preset" (a preset's
    # entry: `preset` names it), "default" (DEFAULT_KL_DIV), "recorded" (an older recording's
    # label, kept as `text`)
    kind: str
    preset: str | None = None
    model: str | None = None  # the entry that matched ("*" for every model)
    why: str | None = None  # why this preset applies when the user did not choose it
    text: str | None = None  # kind "recorded": the label as written

    @property
    def user_set(self) -> bool:
        """The user chose this threshold (--threshold or a config entry), not a preset."""
        if self.kind == "recorded":  # older recordings: their labels started so
            return (self.text or "").startswith(("--threshold", "config thresholds"))
        return self.kind in ("flag", "config")

    @property
    def label(self) -> str:
        """The one-line human label every view shows."""
        match self.kind:
            case "flag":
                return "--threshold"
            case "config":
                return f"config thresholds ({self.model})"
            case "preset":
                why = f" ({self.why})" if self.why else ""
                return f"preset {self.preset}{why} ({self.model})"
            case "default":
                return f"default {DEFAULT_KL_DIV:g} (SGLang CI's common value)"
        return self.text or ""

    def to_dict(self) -> dict[str, str]:
        """The JSON object HelperStarted carries (keys of None values left out)."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def of(cls, value: object) -> ThresholdSource | None:
        """Read what a recording holds: today's object, or an older recording's label text."""
        if isinstance(value, str):
            return cls("recorded", text=value) if value else None
        if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
            return None
        known = {f: value.get(f) for f in ("preset", "model", "why", "text")}
        return cls(value["kind"], **{k: str(v) for k, v in known.items() if v is not None})
