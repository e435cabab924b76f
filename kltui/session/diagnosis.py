"""Condition 1 (shape-variant kernels) vs condition 2 (a state bug on one path), per server.

From `background/sglang_kl_consistency_tests.txt`: k3 is exactly zero only when every kernel is
batch-invariant (condition 1) and both paths compute the same function (condition 2). Condition-1
noise shows in every helper; condition-2 divergence shows only in the helper whose path touches
the broken state ("floating-point noise cannot choose a code path").

The classification reads exact zeros first (a helper with no differing token is proof, not a
level), then per-sample evidence, never a ratio of levels: with match bit-identical any cache-hit
divergence above the 1e-9 stray-ulp floor is condition 2; with match noisy, a cache-hit helper
counts as condition 2 only when its own samples are worse than match's on the same prompts
beyond chance and by a real amount (`paired`: a signed-rank test over samples with an effect
size, on at least 11 common samples, calibrated in `calibration`), and is condition 2 *first*
when it is orders of magnitude above a match that passes its gate. The floor applies the same
way in every branch. At temperature > 0 there is no kernel verdict. The server's own
/server_info decides the advice: nothing already on is advised again.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from kltui.fmt import sci
from kltui.helpers.registry import baseline_path, cache_helpers, path_of, same_engine
from kltui.session.advice import (
    CONDITION2_STEP,
    _condition1_advice,
    _kernel_suspects,
    _settings_line,
    _state_suspects,
    cross_check_command,
    rerun_command,
)
from kltui.session.compare import rerun_equality
from kltui.session.evidence import (
    MIN_COMMON,
    MIN_RATIO,
    PRIMARY_RATIO,
    STRAY_ULP_FLOOR,
    _count_line,
    _exact,
    _shape,
    _usable,
    excess_over_match,
    level_of,
    nonfinite_line,
    nonfinite_positions,
)
from kltui.session.store import SessionStore


@dataclass
class Diagnosis:
    """One server's verdict on conditions 1 and 2, its evidence and the next step."""

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
        """The label (the name the first reports used)."""
        return self.label

    @property
    def details(self) -> list[str]:
        """The evidence (the name the first reports used)."""
        return self.evidence

    def to_dict(self) -> dict:
        """The JSON form (docs/JSON.md `diagnosis`)."""
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
def _temperature(store: SessionStore) -> float:
    t = store.config.temperature
    return t if t is not None and math.isfinite(t) else 0.0


def _coverage(states: dict) -> tuple[list[str], str]:
    """(the notes on unusable helpers, a label tail naming what was not covered and why):
    "not tested" only for helpers that did not run; vacuous and errored have their own words."""
    notes, parts = [], []
    not_run = [h for h in (baseline_path(), *cache_helpers()) if h not in states]
    if not_run:
        parts.append(f"not tested: {', '.join(not_run)}")
    for word, statuses in (
        ("ran but compared nothing (vacuous)", ("vacuous",)),
        ("errored", ("error", "invalid")),
    ):
        hs = []
        for h, st in states.items():
            s = st.summary
            if s is not None and s.status in statuses:
                hs.append(h)
                why = s.reason or s.error or ""
                notes.append(
                    f"{h}: {s.status}{': ' + why if why else ''} (says nothing about its path)"
                )
        if hs:
            parts.append(f"{', '.join(hs)} {word}")
    return notes, "; ".join(parts)


def diagnose_server(store: SessionStore, server: str) -> Diagnosis:
    """Condition 0, 1, 2 (or inconclusive) for one server, with evidence and the next step."""
    info = store.identity(server)
    # a helper comparing two engines, not two paths of one, says nothing about 1 vs 2
    states = {
        st.helper: st
        for st in store.helpers.values()
        if st.server == server and same_engine(st.helper)
    }
    settings = _settings_line(info)
    notes, uncovered = _coverage(states)
    notes = ([settings] if settings else []) + notes
    usable = {h: st for h, st in states.items() if _usable(st)}
    if not usable:
        finished = any(st.summary is not None for st in states.values())
        label = "no helper gave a usable result" if finished else "no helper finished yet"
        return Diagnosis(server, None, [], label, notes)
    evidence = [_count_line(st) for st in usable.values()] + notes
    temp = _temperature(store)
    if temp > 0:
        return Diagnosis(
            server,
            None,
            [],
            f"no kernel verdict: temperature {temp:g} > 0, so k3 measures sampling, not "
            "kernels (prefill and decode may score different draws)",
            evidence,
            [],
            "re-run with --temperature 0 for a verdict on conditions 1 and 2",
        )
    nonfinite = {h: w for h, st in usable.items() if (w := nonfinite_positions(st))}
    evidence += [nonfinite_line(h, w) for h, w in nonfinite.items()]
    exact = {h: _exact(st) for h, st in usable.items()}
    page = info.page_size

    if all(exact.values()):
        label = (
            "bit-identical: prefill and decode agree exactly in every helper run "
            "(conditions 1 and 2 hold)"
        )
        if nonfinite:
            label = (
                f"non-finite logprobs at the same positions on both sides in "
                f"{', '.join(nonfinite)} (a numeric fault, see evidence); otherwise " + label
            )
        step = None
        if uncovered:
            label += f"; {uncovered}"
            step = (
                "cover those paths: run the helpers not tested, and read the evidence for why "
                "the others compared nothing or failed"
            )
        return Diagnosis(server, 0, [], label, evidence, [], step)

    # the registry's roles: the baseline path (match) and the paths that restore state
    base, cache_names = baseline_path(), cache_helpers()
    match = usable.get(base)
    if match is None:
        dirty = [h for h in usable if not exact[h]]
        return Diagnosis(
            server,
            None,
            [],
            f"{' and '.join(dirty)} diverge{'s' if len(dirty) == 1 else ''} but {base} did not "
            "run: kernel noise and a state bug cannot be told apart",
            evidence,
            [],
            f"run {base} too (`--helpers {','.join((base, *cache_names))}`)",
        )

    cache = {h: st for h, st in usable.items() if h in cache_names}
    dirty = [h for h, st in cache.items() if not exact[h]]
    if exact[base]:
        return _match_exact(server, info, cache, dirty, evidence, page)
    return _match_noisy(store, server, info, match, cache, dirty, exact, evidence, page)


def _match_exact(server, info, cache, dirty, evidence, page) -> Diagnosis:
    # kernels agree on match's shapes; a divergence that only a cache path shows is state,
    # unless it stays at rounding level: the floor applies here as in every branch
    state = [h for h in dirty if level_of(cache[h]) > STRAY_ULP_FLOOR]
    below = [h for h in dirty if h not in state]
    if below:
        evidence.append(
            f"{', '.join(below)} stays at or below the {STRAY_ULP_FLOOR:g} stray-ulp floor "
            "(avg_kl_div), where no state bug sits: rounding on that path's shapes"
        )
    if not state:
        step, cmd, action = _condition1_advice(server, info, cache[below[0]])
        return Diagnosis(
            server,
            1,
            [1],
            f"stray ulps only: match is bit-identical and {' and '.join(below)} differs at "
            f"rounding level ({sci(level_of(cache[below[0]]))}), below the "
            f"{STRAY_ULP_FLOOR:g} floor where no state bug sits: not condition 2",
            evidence,
            [],
            step,
            cmd,
            action,
        )
    primary = next(h for h in cache_helpers() if h in state)  # prefill-written KV first
    verb = "diverge" if len(state) > 1 else "diverges"
    evidence += [x for h in state for x in _shape(cache[h], page)]
    return Diagnosis(
        server,
        2,
        [2],
        f"condition 2 (state bug): match is bit-identical but {' and '.join(state)} {verb}, "
        f"so the kernels agree and the fault is in {path_of(primary)}",
        evidence,
        _state_suspects(state, info),
        CONDITION2_STEP,
        cross_check_command(server, state),
    )


def _match_noisy(store, server, info, match, cache, dirty, exact, evidence, page) -> Diagnosis:
    # match diverges: condition 1 on this server. Does a cache path add a state bug on top?
    excess = [excess_over_match(cache[h], match) for h in dirty]
    evidence += [e.line() for e in excess]
    state = [e for e in excess if e.significant]
    few = [e for e in excess if e.too_few and e.level > STRAY_ULP_FLOOR]
    for e in excess:
        if e.significant or e.too_few or not e.beyond_chance:
            continue
        why = (
            f"its avg_kl_div {sci(e.level)} is below the {STRAY_ULP_FLOOR:g} stray-ulp floor "
            "where no state bug sits"
            if e.level <= STRAY_ULP_FLOOR
            else f"by x{e.ratio:.3g} per sample, a drift below the x{MIN_RATIO:g} a "
            "state bug needs (longer or different contexts shift kernel noise)"
        )
        evidence.append(f"{e.helper} is above match beyond chance but {why}: kernel noise")
    mlevel = level_of(match)
    level = sci(mlevel)
    step, cmd, action = _condition1_advice(server, info, match)
    suspects = _kernel_suspects(info, store)
    gate_ok = match.summary.result == "pass"
    if state:
        names = [e.helper for e in state]
        evidence += [x for h in names for x in _shape(cache[h], page)]
        top = max(state, key=lambda e: e.level)
        if gate_ok and top.level >= PRIMARY_RATIO * max(mlevel, STRAY_ULP_FLOOR):
            return Diagnosis(
                server,
                2,
                [1, 2],
                f"condition 2 first (state bug): {' and '.join(names)} "
                f"{'are' if len(names) > 1 else 'is'} orders of magnitude above match "
                f"({sci(top.level)} vs {level}, x{top.ratio:.3g} per sample) while "
                f"match is within its gate: a state bug on {path_of(names[0])}; match's own "
                "kernel noise (condition 1) is small beside it",
                evidence,
                _state_suspects(names, info) + suspects,
                CONDITION2_STEP,
                cross_check_command(server, names),
            )
        return Diagnosis(
            server,
            1,
            [1, 2],
            f"conditions 1 and 2: kernel noise in every helper (match {level}) and "
            f"{' and '.join(names)} beyond it on the same prompts: a state bug on "
            f"{path_of(names[0])}; fix condition 1 first, its noise hides the rest",
            evidence,
            suspects + _state_suspects(names, info),
            step,
            cmd,
            action,
        )
    if few:
        n = min(e.n for e in few)
        return Diagnosis(
            server,
            None,
            [1],
            f"inconclusive (n too small): match diverges ({level}), and whether "
            f"{' and '.join(e.helper for e in few)} add{'s' if len(few) == 1 else ''} a state "
            f"bug cannot be told on {n} common samples (at least {MIN_COMMON} needed)",
            evidence,
            suspects,
            f"re-run with more samples (`--samples 32`); then: {step}",
            rerun_command(server, 32),
        )
    clean = [h for h, st in cache.items() if exact[h]]
    det = info.enable_deterministic_inference
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
    else:
        which = (
            "every helper still diverges"
            if not clean
            else f"match and {' and '.join(dirty)} still diverge ({' and '.join(clean)} exact)"
        )
        label = (
            f"condition 1 with deterministic inference on: {which} (match {level}): a kernel "
            "on the decode path is still shape-variant; deterministic inference fixes the "
            "reduction order, not the shape"
            if det
            else f"condition 1 (batch variance): match diverges ({level}) and "
            f"{' and '.join(dirty)} {_no_more(excess)}: kernels give different results for "
            "prefill and decode shapes"
        )
    return Diagnosis(server, 1, [1], label, evidence, suspects, step, cmd, action)


def _no_more(excess: list) -> str:
    """What the cache-hit helpers showed against match, claiming no more than was tested."""
    verb = "stays" if len(excess) == 1 else "stay"
    if any(e.too_few for e in excess):  # too few samples to test: only the floor speaks
        return f"{verb} at or below the {STRAY_ULP_FLOOR:g} stray-ulp floor"
    return f"show{'s' if len(excess) == 1 else ''} no more than it on the same prompts"


def diagnose(store: SessionStore) -> list[Diagnosis]:
    """One diagnosis per server a helper ran on, in the order they first ran."""
    servers = list(dict.fromkeys(st.server for st in store.helpers.values()))
    return [diagnose_server(store, s) for s in servers]


def bit_identical(prev: SessionStore, cur: SessionStore) -> bool | None:
    """Whether every per-token value of this run equals the previous run's (None: not
    comparable, e.g. different helpers or samples). See `compare.rerun_equality`."""
    return rerun_equality(prev, cur).identical
