"""Condition 1 (batch-variant kernels) vs condition 2 (a state bug on one path).

From `background/sglang_kl_consistency_tests.txt`: k3 is exactly zero only when every kernel is
batch-invariant (condition 1) and both paths compute the same function (condition 2). Condition-1
noise shows in every helper at a similar level; condition-2 divergence shows only in the helper
whose path touches the broken state. That signature is what this module reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kltui.session import SessionStore

# A cache-hit helper this many times worse than match points at its own path, not at kernels.
STATE_BUG_RATIO = 100.0

PATH_OF = {
    "prefill_cache_hit": "prefix restore on a radix-cache hit (KV written by prefill)",
    "decode_cache_hit": "reuse of decode-written KV (radix hit past the prompt: window/SWA/"
    "mamba state or decode-side KV layout)",
}


@dataclass
class Diagnosis:
    server: str
    condition: str  # "exact" | "1" | "2" | "1+2" | "unknown"
    headline: str
    details: list[str] = field(default_factory=list)


def _level(summary: dict) -> float | None:
    v = summary.get("avg_kl_div")
    if v is None or summary.get("status") in ("error", "invalid", "vacuous"):
        return None
    if isinstance(v, str) or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)


def _shape(helper: str, s: dict) -> list[str]:
    """Which sequences diverge and where in generation: the two questions the KL guide asks."""
    rows = [p for p in s.get("per_sample", []) if p.get("n_nonzero")]
    scored = s.get("scored") or 0
    if not rows or not scored:
        return []
    out = []
    if len(rows) <= scored / 4:
        bad = ", ".join(
            f"#{p['index']} (prompt {p['prompt_len']}, cached {p['cached_tokens']})"
            for p in rows[:6]
        )
        out.append(
            f"{helper}: divergence is concentrated in a few requests: {bad}; compare their "
            "prompt length, cached_tokens and page residue with the passing ones"
        )
    firsts = np.array([p["first_divergence"] for p in rows])
    at_start = int(np.count_nonzero(firsts == 0))
    if at_start == len(rows):
        out.append(
            f"{helper}: every divergent sample differs from the first generated token: the "
            "state was already wrong when generation began (prefix restore, not decode)"
        )
    else:
        out.append(
            f"{helper}: divergence starts mid-generation (median position "
            f"{int(np.median(firsts))}, earliest {int(firsts.min())}): something during "
            "decode (window hand-off, checkpoint rotation, batch composition)"
        )
    return out


def diagnose_server(store: SessionStore, server: str) -> Diagnosis:
    # cross_engine compares two engines, not two paths of one: it says nothing about 1 vs 2
    states = {
        st.helper: st
        for st in store.helpers.values()
        if st.server == server and st.helper != "cross_engine"
    }
    levels = {h: _level(st.summary) for h, st in states.items() if st.summary}
    levels = {h: v for h, v in levels.items() if v is not None}
    if not levels:
        return Diagnosis(server, "unknown", "no helper finished yet")
    counts = [
        f"{h}: {st.summary.get('samples_with_difference', 0)}/{st.summary['scored']} samples differ"
        for h, st in states.items()
        if st.summary and st.summary.get("scored")
    ]

    def shaped(helpers: list[str]) -> list[str]:
        return [d for h in helpers for d in _shape(h, states[h].summary)]

    details = counts
    if all(v == 0 for v in levels.values()):
        return Diagnosis(
            server,
            "exact",
            "bit-identical: both paths agree exactly in every helper run (conditions 1 and 2 hold)",
            details,
        )
    base = levels.get("match")
    cache = {h: v for h, v in levels.items() if h != "match"}
    if base is None:
        worst = max(levels, key=levels.get)
        return Diagnosis(
            server,
            "unknown",
            f"{worst} diverges; run match too to separate kernel noise from a state bug",
            details,
        )
    suspects = [h for h, v in cache.items() if v > 0 and (base == 0 or v / base >= STATE_BUG_RATIO)]
    if base == 0 and suspects:
        # decode_cache_hit's turn 2 also restores the prompt's prefix, so a prefix-restore bug
        # shows in both; only a fault confined to decode_cache_hit points at decode-written KV.
        primary = "prefill_cache_hit" if "prefill_cache_hit" in suspects else suspects[0]
        verb = "diverge" if len(suspects) > 1 else "diverges"
        return Diagnosis(
            server,
            "2",
            f"condition 2 (state bug): match is exactly 0 but {' and '.join(suspects)} {verb}, "
            f"so kernels are batch-invariant and the fault is in {PATH_OF[primary]}",
            details + shaped(suspects),
        )
    if base > 0 and suspects:
        return Diagnosis(
            server,
            "1+2",
            f"conditions 1 and 2: every helper shows kernel noise (match "
            f"{base:.2e}) and {', '.join(suspects)} is >= {STATE_BUG_RATIO:g}x worse: "
            f"a state bug on {PATH_OF.get(suspects[0], suspects[0])}",
            details + shaped(suspects),
        )
    if base > 0 and not cache:
        return Diagnosis(
            server,
            "1",
            f"condition 1 (batch variance): match diverges at {base:.2e}; the cache-hit helpers "
            "will tell whether a state bug hides under this noise",
            details,
        )
    if base > 0:
        return Diagnosis(
            server,
            "1",
            f"condition 1 (batch variance): match diverges at {base:.2e} and the "
            "cache-hit helpers at a similar level: kernels give different results "
            "for prefill and decode batch shapes (try --enable-deterministic-"
            "inference)",
            details,
        )
    return Diagnosis(server, "unknown", "match is exact; cache-hit helpers not run", details)


def diagnose(store: SessionStore) -> list[Diagnosis]:
    servers = list(dict.fromkeys(st.server for st in store.helpers.values()))
    return [diagnose_server(store, s) for s in servers]


def bit_identical(prev: SessionStore, cur: SessionStore) -> bool | None:
    """Whether every per-token logprob of this run equals the previous run's (None: not
    comparable, e.g. different helpers or samples)."""
    if set(prev.helpers) != set(cur.helpers):
        return None
    for key, st in cur.helpers.items():
        other = prev.helpers[key]
        if set(st.book.samples) != set(other.book.samples):
            return None
        for s, a in st.book.samples.items():
            b = other.book.samples[s]
            if a.lp_a.shape != b.lp_a.shape or not (
                np.array_equal(a.lp_a, b.lp_a, equal_nan=True)
                and np.array_equal(a.lp_b, b.lp_b, equal_nan=True)
                and np.array_equal(a.token_ids, b.token_ids)
            ):
                return False
    return True
