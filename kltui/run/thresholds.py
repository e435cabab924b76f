"""Per-model threshold entries (a config file's `thresholds:`, the presets) and the one rule
that resolves a helper's gate for a server."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from kltui.metrics.presets import DEFAULT_KL_DIV, PRESETS, ThresholdSource
from kltui.registry import HELPERS


@dataclass
class ThresholdEntry:
    """One per-model threshold entry, as SGLang's ThresholdEntry."""

    model: str
    tp: int | None = None
    kl_div: float | None = None
    kl_div_prefill: float | None = None
    kl_div_decode: float | None = None
    # multiturn's gate (unified_radix_cache_kit's kl_threshold), else kl_div
    kl_div_multiturn: float | None = None
    tail_threshold: float | None = None

    def matches(self, model: str | None, tp: int | None) -> bool:
        """Whether this entry applies to a server's model and tp size."""
        if self.tp is not None and tp is not None and self.tp != tp:
            return False
        if self.model == "*":
            return True
        if not model:
            return False
        # a server reports a local path or an HF id; compare the tail too
        return model == self.model or model.rstrip("/").endswith("/" + self.model.split("/")[-1])

    def for_helper(self, helper: str) -> float | None:
        """This entry's threshold for a helper (its own field, else kl_div)."""
        spec = HELPERS.get(helper)
        specific = getattr(self, spec.threshold_field if spec else "kl_div")
        return specific if specific is not None else self.kl_div  # SGLang's `or` fallback


class GateSettings(Protocol):
    """What resolving a threshold reads of a RunConfig."""

    threshold: float | None
    tail_threshold: float
    preset: str | None
    thresholds: list[ThresholdEntry]


@dataclass(frozen=True)
class Threshold:
    """One helper's resolved thresholds and where kl_div came from."""

    kl_div: float
    tail_threshold: float
    source: ThresholdSource


def resolve_threshold(
    cfg: GateSettings, helper: str, *, model: str | None, tp: int | None, deterministic: bool
) -> Threshold:
    """CLI/config threshold > config entry for (model, tp) > deterministic floor when the server
    runs deterministic inference > SGLang CI preset for the model > the common CI value."""
    tail = cfg.tail_threshold
    if cfg.threshold is not None:
        return Threshold(cfg.threshold, tail, ThresholdSource("flag"))
    sources: list[tuple[ThresholdSource, list[ThresholdEntry]]] = [
        (ThresholdSource("config"), cfg.thresholds)
    ]
    if cfg.preset:
        sources.append((ThresholdSource("preset", cfg.preset), _preset(cfg.preset)))
    if deterministic:
        why = "server reports enable_deterministic_inference"
        sources.append(
            (ThresholdSource("preset", "deterministic", why=why), _preset("deterministic"))
        )
    sources.append((ThresholdSource("preset", "sglang-ci"), _preset("sglang-ci")))
    for src, entries in sources:
        for e in entries:
            if e.matches(model, tp) and (kl := e.for_helper(helper)) is not None:
                t = e.tail_threshold if e.tail_threshold is not None else tail
                return Threshold(float(kl), t, replace(src, model=e.model))
    return Threshold(DEFAULT_KL_DIV, tail, ThresholdSource("default"))


def _preset(name: str) -> list[ThresholdEntry]:
    return [ThresholdEntry(**e) for e in PRESETS[name]]
