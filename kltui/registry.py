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

# Tokens each sample decodes unless --max-new-tokens says otherwise (the config, the helpers'
# context and the command line's help all read it here).
DEFAULT_MAX_NEW_TOKENS = 512


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
    # "server": runs on every --server; "baseline": once, the first server against --baseline;
    # "reference": once, the first server (and the vLLM baseline) against --baseline hf:PATH
    scope: str = "server"
    # how many generations of max_new_tokens one prompt's requests hold (for context fitting)
    turns: int = 1
    # run when --helpers is not given
    default: bool = True
    # after the gate, fetch top-k alternatives and token text of its worst samples (extras.py)
    extras: bool = True
    # what the diagnosis reads its result as (docs/DIAGNOSIS.md): "baseline", the cold path
    # every other path is compared with (its divergence is kernel noise, condition 1); "cache",
    # a path that restores state (a divergence beyond the baseline's is a state bug, condition
    # 2); "engines", two engines compared (no condition)
    role: str = "cache"
    # role "cache": whose KV the radix hit restores ("prefill" or "decode"); the diagnosis names
    # the prefill-written one first, and the advice adds its page granularity
    cache_path: str | None = None

    @property
    def condition(self) -> int | None:
        """The condition a divergence of this helper's own speaks to (None: it compares engines)."""
        return {"baseline": 1, "cache": 2}.get(self.role)

    @property
    def same_engine(self) -> bool:
        """Both sides are one SGLang server, so the helper tells its code paths apart."""
        return self.scope == "server"

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
            role="baseline",
        ),
        Helper(
            "prefill_cache_hit",
            threshold_field="kl_div_prefill",
            side_b="decode",
            path="prefix restore on a radix-cache hit (KV written by prefill)",
            start="kltui.helpers.cache_hit:prefill_cache_hit",
            cache_path="prefill",
        ),
        Helper(
            "decode_cache_hit",
            threshold_field="kl_div_decode",
            side_b="decode",
            path="reuse of decode-written KV (radix hit past the prompt: window/SWA/"
            "mamba state or decode-side KV layout)",
            start="kltui.helpers.cache_hit:decode_cache_hit",
            turns=2,
            cache_path="decode",
        ),
        Helper(
            "multiturn",
            threshold_field="kl_div_multiturn",
            side_b="decode",
            path="multi-turn reuse over competing branches (interleaved radix hits at many "
            "history lengths: the decode-side save past a page or track boundary)",
            start="kltui.helpers.multiturn:multiturn",
            default=False,
            cache_path="decode",
        ),
        Helper(
            "cross_engine",
            threshold_field="kl_div",
            side_b="baseline engine",
            path=None,
            start="kltui.helpers.cross_engine:run_cross_engine",
            scope="baseline",
            default=False,
            extras=False,
            role="engines",
        ),
        Helper(
            "hf_reference",
            threshold_field="kl_div",
            side_b="HF reference",
            path=None,
            start="kltui.helpers.hf_judge:run_hf_reference",
            scope="reference",
            default=False,
            extras=False,
            role="engines",
        ),
    )
}
DEFAULT_HELPERS = tuple(n for n, h in HELPERS.items() if h.default)
SERVER_HELPERS = tuple(n for n, h in HELPERS.items() if h.scope == "server")
BASELINE_HELPERS = tuple(n for n, h in HELPERS.items() if h.scope == "baseline")
REFERENCE_HELPERS = tuple(n for n, h in HELPERS.items() if h.scope == "reference")


# Read at call time, so an entry added to HELPERS (a test's fourth helper) takes its role.
def baseline_path() -> str:
    """The helper whose path every other is compared with (role "baseline": match)."""
    return next(n for n, h in HELPERS.items() if h.role == "baseline")


def cache_helpers() -> tuple[str, ...]:
    """The helpers that probe restored state (role "cache"), prefill-written KV first."""
    names = [n for n, h in HELPERS.items() if h.role == "cache"]
    return tuple(sorted(names, key=lambda n: HELPERS[n].cache_path != "prefill"))


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
