"""Condition 1 (shape-variant kernels) vs condition 2 (a state bug on one path), per server.

From `background/sglang_kl_consistency_tests.txt`: k3 is exactly zero only when every kernel is
batch-invariant (condition 1) and both paths compute the same function (condition 2). Condition-1
noise shows in every helper; condition-2 divergence shows only in the helper whose path touches
the broken state ("floating-point noise cannot choose a code path").

The classification reads exact zeros first (a helper with no differing token is proof, not a
level), then per-sample evidence, never a ratio of levels: with match bit-identical any cache-hit
divergence is condition 2; with match noisy, a cache-hit helper counts as condition 2 only when
its own samples are worse than match's on the same prompts beyond what chance allows (a paired
sign test over samples, and how many of its tokens lie above match's largest k3), and its level
is above the stray-ulp floor where, per the guide, no state bug sits. The server's own
/server_info decides the advice: nothing already on is advised again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kltui.fmt import sci
from kltui.helpers.registry import same_engine
from kltui.session.advice import (
    CONDITION2_STEP,
    PATH_OF,
    _condition1_advice,
    _flag,
    _kernel_suspects,
    _settings_line,
    _state_suspects,
)
from kltui.session.compare import rerun_equality
from kltui.session.evidence import (
    EVIDENCE_P,
    STRAY_ULP_FLOOR,
    UNUSABLE,
    _count_line,
    _exact,
    _shape,
    _usable,
    excess_over_match,
)
from kltui.session.store import SessionStore

CACHE_HELPERS = ("prefill_cache_hit", "decode_cache_hit")  # the helpers named in the rules below


@dataclass
class Diagnosis:
    server: str
    condition: int | None  # 0 both hold, 1 or 2 the one to fix first, None inconclusive
    conditions: list[int]  # every condition the evidence shows broken ([1, 2] when both)
    label: str
    evidence: list[str] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)
    next_step: str | None = None
    # the exact command of the next step, and what the TUI can open for it ("dumps")
    next_command: str | None = None
    action: str | None = None

    @property
    def kind(self) -> str:
        """ "exact" | "1" | "2" | "1+2" | "unknown": a key for styles and labels."""
        if self.condition is None:
            return "unknown"
        if self.condition == 0:
            return "exact"
        return "+".join(str(c) for c in self.conditions)

    # the names the first reports used
    @property
    def headline(self) -> str:
        return self.label

    @property
    def details(self) -> list[str]:
        return self.evidence

    def to_dict(self) -> dict:
        d = asdict(self)
        return {
            k: d[k]
            for k in (
                "server",
                "condition",
                "conditions",
                "label",
                "evidence",
                "suspects",
                "next_step",
                "next_command",
                "action",
            )
        }


# --------------------------------------------------------------------------- classification
def server_info(store: SessionStore, server: str) -> dict:
    for s in store.run.servers if store.run else []:
        if s.get("url") == server:
            return s
    return {}


def diagnose_server(store: SessionStore, server: str) -> Diagnosis:
    info = server_info(store, server)
    # a helper comparing two engines, not two paths of one, says nothing about 1 vs 2
    states = {
        st.helper: st
        for st in store.helpers.values()
        if st.server == server and same_engine(st.helper)
    }
    settings = _settings_line(info)
    notes = [settings] if settings else []
    for h, st in states.items():
        status = st.summary.status if st.summary else None
        if status in UNUSABLE:
            why = st.summary.reason or st.summary.error or ""
            notes.append(f"{h}: {status}{': ' + why if why else ''} (says nothing about its path)")
    usable = {h: st for h, st in states.items() if _usable(st)}
    if not usable:
        finished = any(st.summary is not None for st in states.values())
        label = "no helper gave a usable result" if finished else "no helper finished yet"
        return Diagnosis(server, None, [], label, notes)
    evidence = [_count_line(st) for st in usable.values()] + notes
    exact = {h: _exact(st) for h, st in usable.items()}
    untested = [h for h in ("match", *CACHE_HELPERS) if h not in usable]
    page = info.get("page_size")

    if all(exact.values()):
        label = (
            "bit-identical: prefill and decode agree exactly in every helper run "
            "(conditions 1 and 2 hold)"
        )
        step = None
        if untested:
            label += f"; not tested: {', '.join(untested)}"
            step = f"run {', '.join(untested)} as well to cover their paths"
        return Diagnosis(server, 0, [], label, evidence, [], step)

    match = usable.get("match")
    if match is None:
        dirty = [h for h in usable if not exact[h]]
        return Diagnosis(
            server,
            None,
            [],
            f"{' and '.join(dirty)} diverge{'s' if len(dirty) == 1 else ''} but match did not "
            "run: kernel noise and a state bug cannot be told apart",
            evidence,
            [],
            "run match too (`--helpers match,prefill_cache_hit,decode_cache_hit`)",
        )

    cache = {h: st for h, st in usable.items() if h in CACHE_HELPERS}
    dirty = [h for h, st in cache.items() if not exact[h]]

    if exact["match"]:
        # kernels agree on match's shapes; a divergence that only a cache path shows is state
        primary = "prefill_cache_hit" if "prefill_cache_hit" in dirty else dirty[0]
        verb = "diverge" if len(dirty) > 1 else "diverges"
        evidence += [x for h in dirty for x in _shape(cache[h], page)]
        below = [h for h in dirty if float(cache[h].summary.avg_kl_div or 0) <= STRAY_ULP_FLOOR]
        if below:
            evidence.append(
                f"{', '.join(below)} stays below the {STRAY_ULP_FLOOR:g} stray-ulp floor: a "
                "path-specific difference all the same (noise does not choose a code path)"
            )
        return Diagnosis(
            server,
            2,
            [2],
            f"condition 2 (state bug): match is bit-identical but {' and '.join(dirty)} {verb}, "
            f"so the kernels agree and the fault is in {PATH_OF[primary]}",
            evidence,
            _state_suspects(dirty, info),
            CONDITION2_STEP,
        )

    # match diverges: condition 1 on this server. Does a cache path add a state bug on top?
    excess = [excess_over_match(cache[h], match) for h in dirty]
    evidence += [e.line() for e in excess]
    state = [e.helper for e in excess if e.significant]
    quiet = [e.helper for e in excess if not e.significant and min(e.p_sign, e.p_tail) < EVIDENCE_P]
    for h in quiet:
        evidence.append(
            f"{h} is above match beyond chance but at {sci(cache[h].summary.avg_kl_div)}"
            f", below the {STRAY_ULP_FLOOR:g} stray-ulp floor where no state bug sits: kernel "
            "noise on its path's shapes"
        )
    step, cmd, action = _condition1_advice(server, info)
    suspects = _kernel_suspects(info, store)
    det = _flag(info, "enable_deterministic_inference")
    level = sci(match.summary.avg_kl_div)
    if state:
        evidence += [x for h in state for x in _shape(cache[h], page)]
        return Diagnosis(
            server,
            1,
            [1, 2],
            f"conditions 1 and 2: kernel noise in every helper (match {level}) and "
            f"{' and '.join(state)} beyond it on the same prompts: a state bug on "
            f"{PATH_OF[state[0]]}; fix condition 1 first, its noise hides the rest",
            evidence,
            suspects + _state_suspects(state, info),
            step,
            cmd,
            action,
        )
    clean = [h for h, st in cache.items() if exact[h]]
    if cache and len(clean) == len(cache):
        label = (
            f"condition 1 on match's path only: match diverges ({level}) while "
            f"{' and '.join(clean)} {'are' if len(clean) > 1 else 'is'} bit-identical, so the "
            "restored-prefix paths agree and a kernel is shape-variant only on the cold "
            "prefill-then-decode path"
        )
    elif not cache:
        label = (
            f"condition 1: match diverges ({level}); run the cache-hit helpers to see whether "
            "a state bug hides under this noise"
        )
    elif det:
        label = (
            f"condition 1 with deterministic inference on: every helper still diverges (match "
            f"{level}): a kernel on the decode path is still shape-variant; deterministic "
            "inference fixes the reduction order, not the shape"
        )
    else:
        label = (
            f"condition 1 (batch variance): match diverges ({level}) and the cache-hit helpers "
            "show no more than it on the same prompts: kernels give different results for "
            "prefill and decode shapes"
        )
    return Diagnosis(server, 1, [1], label, evidence, suspects, step, cmd, action)


def diagnose(store: SessionStore) -> list[Diagnosis]:
    servers = list(dict.fromkeys(st.server for st in store.helpers.values()))
    return [diagnose_server(store, s) for s in servers]


def bit_identical(prev: SessionStore, cur: SessionStore) -> bool | None:
    """Whether every per-token value of this run equals the previous run's (None: not
    comparable, e.g. different helpers or samples). See `compare.rerun_equality`."""
    return rerun_equality(prev, cur)["identical"]
