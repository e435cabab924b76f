"""Every helper kltui knows, as data: its name, the SGLang threshold field it is gated by,
which path of the engine it exercises, what it compares against, and how it runs.

Pure data with no imports of the helpers themselves (`start` names a function, imported when
a run starts), so views and the diagnosis read it without pulling in the HTTP clients. To add
a helper: write it (copy `match.py`), then add one `Helper` entry here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

# Tokens each sample decodes unless --max-new-tokens says otherwise (the config, the helpers'
# context and the command line's help all read it here).
DEFAULT_MAX_NEW_TOKENS = 512


class Scope(StrEnum):
    """Which servers a helper runs on."""

    SERVER = "server"  # every --server
    BASELINE = "baseline"  # once, the first server against --baseline
    REFERENCE = "reference"  # once, the first server (and the vLLM baseline) against hf:PATH


class Role(StrEnum):
    """What the diagnosis reads a helper's result as (docs/DIAGNOSIS.md)."""

    BASELINE = "baseline"  # the cold path every other is compared with: condition 1
    CACHE = "cache"  # a path that restores state: beyond the baseline, condition 2
    ENGINES = "engines"  # two engines compared: no condition


class CachePath(StrEnum):
    """Whose KV a cache helper's radix hit restores."""

    PREFILL = "prefill"
    DECODE = "decode"


@dataclass(frozen=True)
class Helper:
    """One helper as data: what it gates on, what it compares, how it runs, its role."""

    name: str
    # ThresholdEntry field gating avg_kl_div (SGLang's kl_div, kl_div_prefill, kl_div_decode,
    # and kl_div_multiturn, the kit's kl_threshold; an entry without it falls back to kl_div,
    # as SGLang's `or` does)
    threshold_field: str
    # what side B of "A vs B" is: the same request decoded, or another engine
    side_b: str
    # the engine path this helper's k3 says something about (None: compares engines, not paths)
    path: str | None
    # "module:function" of `start(ctx: HelperContext, run: Run)`, an async iterator of events
    # that raises PhaseError (with `.finished`, what was measured) on a fatal fault
    start: str
    scope: Scope = Scope.SERVER
    # how many generations of max_new_tokens one prompt's requests hold (for context fitting)
    turns: int = 1
    # run when --helpers is not given
    default: bool = True
    # after the gate, fetch top-k alternatives and token text of its worst samples (extras.py)
    extras: bool = True
    role: Role = Role.CACHE
    # role CACHE: the diagnosis names the prefill-written one first, and the advice adds its
    # page granularity
    cache_path: CachePath | None = None

    @property
    def condition(self) -> int | None:
        """The condition a divergence of this helper's own speaks to (None: it compares engines)."""
        return {Role.BASELINE: 1, Role.CACHE: 2}.get(self.role)

    @property
    def same_engine(self) -> bool:
        """Both sides are one SGLang server, so the helper tells its code paths apart."""
        return self.scope == Scope.SERVER

    def starter(self) -> Callable:
        """The helper's start function (imported now, not when the registry is read)."""
        module, func = self.start.split(":")
        return getattr(importlib.import_module(module), func)


HELPERS: dict[str, Helper] = {
    h.name: h
    for h in (
        Helper(
            "match",
            threshold_field="kl_div",
            side_b="decode",
            path="prefill vs decode with no cache reuse",
            start="kltui.helpers.match:match",
            role=Role.BASELINE,
        ),
        Helper(
            "prefill_cache_hit",
            threshold_field="kl_div_prefill",
            side_b="decode",
            path="prefix restore on a radix-cache hit (KV written by prefill)",
            start="kltui.helpers.cache_hit:prefill_cache_hit",
            cache_path=CachePath.PREFILL,
        ),
        Helper(
            "decode_cache_hit",
            threshold_field="kl_div_decode",
            side_b="decode",
            path="reuse of decode-written KV (radix hit past the prompt: window/SWA/"
            "mamba state or decode-side KV layout)",
            start="kltui.helpers.cache_hit:decode_cache_hit",
            turns=2,
            cache_path=CachePath.DECODE,
        ),
        Helper(
            "multiturn",
            threshold_field="kl_div_multiturn",
            side_b="decode",
            path="multi-turn reuse over competing branches (interleaved radix hits at many "
            "history lengths: the decode-side save past a page or track boundary)",
            start="kltui.helpers.multiturn:multiturn",
            default=False,
            cache_path=CachePath.DECODE,
        ),
        Helper(
            "cross_engine",
            threshold_field="kl_div",
            side_b="baseline engine",
            path=None,
            start="kltui.helpers.cross_engine:run_cross_engine",
            scope=Scope.BASELINE,
            default=False,
            extras=False,
            role=Role.ENGINES,
        ),
        Helper(
            "hf_reference",
            threshold_field="kl_div",
            side_b="HF reference",
            path=None,
            start="kltui.helpers.hf_judge:run_hf_reference",
            scope=Scope.REFERENCE,
            default=False,
            extras=False,
            role=Role.ENGINES,
        ),
    )
}
DEFAULT_HELPERS = tuple(n for n, h in HELPERS.items() if h.default)
SERVER_HELPERS = tuple(n for n, h in HELPERS.items() if h.scope == Scope.SERVER)
BASELINE_HELPERS = tuple(n for n, h in HELPERS.items() if h.scope == Scope.BASELINE)
REFERENCE_HELPERS = tuple(n for n, h in HELPERS.items() if h.scope == Scope.REFERENCE)


# Read at call time, so an entry added to HELPERS (a test's fourth helper) takes its role.
def baseline_path() -> str:
    """The helper whose path every other is compared with (role "baseline": match)."""
    return next(n for n, h in HELPERS.items() if h.role == Role.BASELINE)


def cache_helpers() -> tuple[str, ...]:
    """The helpers that probe restored state (role "cache"), prefill-written KV first."""
    names = [n for n, h in HELPERS.items() if h.role == Role.CACHE]
    return tuple(sorted(names, key=lambda n: HELPERS[n].cache_path != CachePath.PREFILL))


def path_of(name: str) -> str:
    """The engine path a helper's k3 says something about (its name when the entry has none)."""
    h = HELPERS.get(name)
    return h.path if h is not None and h.path else name


def helper(name: str) -> Helper | None:
    """The registry entry of `name` (None for a helper this version does not know)."""
    return HELPERS.get(name)


def same_engine(name: str) -> bool:
    """False for a helper that compares engines (and for one this version does not know)."""
    h = HELPERS.get(name)
    return h is not None and h.same_engine
