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

from kltui.engines.identity import ServerIdentity
from kltui.fmt import sci
from kltui.readings.advice import (
    CONDITION2_STEP,
    _condition1_advice,
    _kernel_suspects,
    _settings_line,
    _state_suspects,
    cross_check_command,
    rerun_command,
)
from kltui.readings.compare import rerun_equality
from kltui.readings.coverage import page_misses, untested
from kltui.readings.evidence import (
    EVIDENCE_P,
    MIN_COMMON,
    MIN_RATIO,
    PRIMARY_RATIO,
    STRAY_ULP_FLOOR,
    _count_line,
    _exact,
    _shape,
    _usable,
    affected_in_common,
    level_of,
    nonfinite_line,
    nonfinite_positions,
    path_side,
)
from kltui.readings.path_test import FEW, NOISE, STATE, STRAY, SUSPECT, UNCLEAR, PathVerdict, judge
from kltui.registry import baseline_path, cache_helpers, path_of, same_engine
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore


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


def _coverage(
    states: dict, page: int | None = None, new_tokens: int | None = None
) -> tuple[list[str], dict[str, str]]:
    """(the notes on helpers that did not test their path, helper -> why) for every path the
    diagnosis needs: match and each cache-hit helper. Only a tested helper is evidence."""
    notes, why = [], {}
    for h in (baseline_path(), *cache_helpers()):
        st = states.get(h)
        reason = "did not run" if st is None else untested(st)
        if reason is not None:
            why[h] = reason
            if st is not None:
                notes.append(f"{h}: not tested: {reason} (says nothing about its path)")
        # why a cache path's samples missed, wherever the misses cost it a test or its gate
        failed = st is not None and st.summary is not None and st.summary.result == "fail"
        if st is not None and (reason is not None or failed):
            if (hint := page_misses(st, page, new_tokens)) is not None:
                notes.append(hint)
    for h, st in states.items():  # a helper the registry gives no role still gets its note
        if h not in why and h not in (baseline_path(), *cache_helpers()):
            reason = untested(st)
            if reason is not None:
                why[h] = reason
                notes.append(f"{h}: not tested: {reason} (says nothing about its path)")
    return notes, why


def _protocol_lines(states: dict) -> list[str]:
    """Each protocol finding of a helper, as its own line: never read as numerics."""
    out = []
    for st in states.values():
        for f in (st.summary.protocol or []) if st.summary is not None else []:
            out.append(f"protocol fault, not numerics: {f['message']}")
    return out


def _rests_on(tested: dict) -> str:
    """Which helpers and how many samples a verdict rests on."""
    parts = [
        f"{h} {HelperView.of(st).scored}/{HelperView.of(st).samples}" for h, st in tested.items()
    ]
    return f" [rests on {', '.join(parts)} samples scored]" if parts else ""


def _untested_tail(why: dict[str, str]) -> str:
    return "; ".join(f"{h} not tested ({w})" for h, w in why.items())


def _import_reading(store: SessionStore, server: str) -> Diagnosis | None:
    """An imported file (`kltui import`): its reading as the import computed it (rl/reading.py),
    never a condition: the file records no cache paths or batches. None for a live server the
    import re-scored on (`--server`): its match helper is diagnosed as any run's."""
    mine = [st for st in store.helpers.values() if st.server == server]
    if not any(st.settings.get("source") == "import" for st in mine):
        return None
    for st in store.helpers.values():
        raw = st.summary.raw if st.server == server and st.summary is not None else {}
        found = raw.get("rl", {}).get("reading") if isinstance(raw.get("rl"), dict) else None
        if isinstance(found, dict) and isinstance(found.get("label"), str):
            evidence = [str(e) for e in found.get("evidence") or []]
            step, cmd = found.get("next_step"), found.get("next_command")
            return Diagnosis(
                server,
                None,
                [],
                found["label"],
                evidence,
                [],
                step if isinstance(step, str) else None,
                cmd if isinstance(cmd, str) else None,
            )
    return Diagnosis(server, None, [], "the file is still being read")


def diagnose_server(store: SessionStore, server: str) -> Diagnosis:
    """Condition 0, 1, 2 (or inconclusive) for one server, with evidence and the next step."""
    if store.config.get("source") == "import" and (found := _import_reading(store, server)):
        return found
    info = store.identity(server)
    # a helper comparing two engines, not two paths of one, says nothing about 1 vs 2
    states = {
        st.helper: st
        for st in store.helpers.values()
        if st.server == server and same_engine(st.helper)
    }
    settings = _settings_line(info)
    notes, why = _coverage(states, info.page_size, store.config.max_new_tokens)
    notes = ([settings] if settings else []) + _protocol_lines(states) + notes
    usable = {h: st for h, st in states.items() if h not in why and _usable(st)}
    rests = _rests_on(usable)
    if not usable:
        finished = any(st.summary is not None for st in states.values())
        if not finished:
            return Diagnosis(server, None, [], "no helper finished yet", notes)
        return Diagnosis(
            server,
            None,
            [],
            f"inconclusive: no helper tested its path ({_untested_tail(why)})",
            notes,
            [],
            "read the evidence for why each helper compared nothing, fix that and re-run",
        )
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
    base, cache_names = baseline_path(), cache_helpers()

    if all(exact.values()):
        prefix = (
            f"non-finite logprobs at the same positions on both sides in "
            f"{', '.join(nonfinite)} (a numeric fault, see evidence); otherwise "
            if nonfinite
            else ""
        )
        # a helper the run did not ask for is named, not held against it; one that was asked
        # and tested nothing is; and condition 2 needs at least one cache path tested
        asked = set(store.config.helpers) or {base, *cache_names}
        blocking = {h: w for h, w in why.items() if h in asked}
        unasked = [h for h in why if h not in asked]
        if not blocking and base in usable and any(h in usable for h in cache_names):
            more = (
                f" on the paths tested; not run (not asked for): {', '.join(unasked)}"
                if unasked
                else ""
            )
            # bit-identical where compared is no pass: a helper can still fail its gate (too
            # few cache hits) on the samples it did not compare
            fails = [
                (h, st.summary.hit_failure or "see its result")
                for h, st in usable.items()
                if st.summary is not None and st.summary.result == "fail"
            ]
            gate = "".join(f"; but {h} fails its gate ({w})" for h, w in fails)
            scope = " on the samples compared" if any(st.skipped for st in usable.values()) else ""
            return Diagnosis(
                server,
                0,
                [],
                prefix + "bit-identical: prefill and decode agree exactly in every helper "
                f"(conditions 1 and 2 hold{more}{scope}){gate}" + rests,
                evidence,
                [],
                "cover the samples that missed: read the evidence for why they did, fix that "
                "and re-run"
                if fails
                else None,
            )
        held = (
            "condition 1 holds on match's shapes; condition 2 is not established: "
            if base in usable
            else "neither condition is established (match not tested): "
        )
        return Diagnosis(
            server,
            None,
            [],
            prefix
            + f"inconclusive: bit-identical where tested ({', '.join(usable)}); "
            + held
            + _untested_tail(why)
            + rests,
            evidence,
            [],
            "cover those paths: run the helpers not tested, and read the evidence for why "
            "the others compared nothing or failed",
        )

    match = usable.get(base)
    if match is None:
        dirty = [h for h in usable if not exact[h]]
        return Diagnosis(
            server,
            None,
            [],
            f"inconclusive: {' and '.join(dirty)} diverge{'s' if len(dirty) == 1 else ''} but "
            f"{base} was not tested ({why.get(base, 'did not run')}): kernel noise and a state "
            "bug cannot be told apart" + rests,
            evidence,
            [],
            f"run {base} too, on a server that flushes (`--helpers {','.join((base, *cache_names))}`)",
        )

    cache = {h: st for h, st in usable.items() if h in cache_names}
    dirty = [h for h, st in cache.items() if not exact[h]]
    # each cache path against match on the same sample ids, in the cache helper's order
    # with match exact, the exact cache paths' samples are where shared noise could also fall
    pool = sum(path_side(st).samples for h, st in cache.items() if exact[h])
    verdicts = [
        judge(h, path_side(cache[h]), path_side(match, cache[h].book.order), pool) for h in dirty
    ]
    ctx = _Ctx(store, server, info, match, cache, verdicts, evidence, page, why, rests)
    if exact[base]:
        return _match_exact(ctx)
    return _match_noisy(ctx, exact)


@dataclass
class _Ctx:
    """What both branches read."""

    store: SessionStore
    server: str
    info: ServerIdentity
    match: HelperState
    cache: dict
    verdicts: list[PathVerdict]
    evidence: list[str]
    page: int | None
    why: dict[str, str]
    rests: str

    def of(self, kind: str) -> list[PathVerdict]:
        return [v for v in self.verdicts if v.kind == kind]

    def failing(self) -> list[str]:
        """Tested helpers that fail their gate."""
        return [
            h
            for h, st in (*self.cache.items(), (baseline_path(), self.match))
            if st.summary is not None and st.summary.result == "fail"
        ]

    def uncovered(self) -> list[str]:
        """Helpers that ran but tested nothing (vacuous, errored, too few scored): each fails
        the run as surely as a gate does, whatever the tested helpers read."""
        return [h for h, w in self.why.items() if w != "did not run"]

    def tail(self) -> str:
        """What was not tested, appended to a label."""
        t = _untested_tail(self.why)
        return (f"; {t}" if t else "") + self.rests


def _match_exact(c: _Ctx) -> Diagnosis:
    # kernels agree on match's shapes; a divergence only a cache path shows is state, when it
    # is above the floor and more than noise shared by every path could put on one path alone
    server, info = c.server, c.info
    stray, unclear, state = c.of(STRAY), c.of(UNCLEAR), c.of(STATE)
    msamples = path_side(c.match).samples
    clean = [f"{h}'s {path_side(st).samples}" for h, st in c.cache.items() if _exact(st)]
    others = f"match's {msamples}" + "".join(f" nor {x}" for x in clean)
    for v in stray:
        c.evidence.append(
            f"{v.helper} stays at or below the {STRAY_ULP_FLOOR:g} stray-ulp floor "
            "(avg_kl_div), where no state bug sits: rounding on that path's shapes"
        )
    for v in (*state, *unclear):
        side = path_side(c.cache[v.helper])
        c.evidence.append(
            f"{v.helper}: {side.differing_samples} of {side.samples} samples differ "
            f"({side.differing} of {side.tokens} tokens), {others} samples none: were they "
            "noise shared by every path (a sample at a time: a difference carries forward to "
            f"its later tokens), all of them would miss those with chance p={v.p:.2g} (a state "
            f"bug needs p<{EVIDENCE_P:g})"
        )
    if state:
        names = [v.helper for v in state]
        primary = next(h for h in cache_helpers() if h in names)  # prefill-written KV first
        verb = "diverge" if len(names) > 1 else "diverges"
        c.evidence += [x for h in names for x in _shape(c.cache[h], c.page)]
        return Diagnosis(
            server,
            2,
            [2],
            f"condition 2 (state bug): match is bit-identical but {' and '.join(names)} {verb} "
            f"beyond chance, so the kernels agree and the fault is in {path_of(primary)}"
            + c.tail(),
            c.evidence,
            _state_suspects(names, info),
            CONDITION2_STEP,
            cross_check_command(server, names),
        )
    if unclear:
        names = [v.helper for v in unclear]
        c.evidence += [x for h in names for x in _shape(c.cache[h], c.page)]
        return Diagnosis(
            server,
            None,
            [],
            f"inconclusive: match is bit-identical and {' and '.join(names)} differ"
            f"{'s' if len(names) == 1 else ''} in too few samples to tell a state bug from noise "
            f"that every path shares and match missed by chance (p={min(v.p or 1 for v in unclear):.2g})"
            + c.tail(),
            c.evidence,
            _state_suspects(names, c.info),
            "decide it with more samples (`--samples 128`), more like the differing ones (see "
            "evidence): noise shows on match too, a state bug keeps to its path",
            rerun_command(server, 128),
        )
    below = [v.helper for v in stray]
    step, cmd, action = _condition1_advice(
        server, info, c.cache[below[0]], c.failing(), c.uncovered()
    )
    return Diagnosis(
        server,
        1,
        [1],
        f"stray ulps only: match is bit-identical and {' and '.join(below)} differs at "
        f"rounding level ({sci(level_of(c.cache[below[0]]))}), below the "
        f"{STRAY_ULP_FLOOR:g} floor where no state bug sits: not condition 2" + c.tail(),
        c.evidence,
        [],
        step,
        cmd,
        action,
    )


def _match_noisy(c: _Ctx, exact: dict) -> Diagnosis:
    # match diverges: condition 1 on this server. Does a cache path add a state bug on top?
    server, info, match, cache, evidence = c.server, c.info, c.match, c.cache, c.evidence
    excess = [v.paired for v in c.verdicts if v.paired is not None]
    evidence += [e.line() for e in excess]
    state = [v.paired for v in c.of(STATE) if v.paired is not None]
    few = [v.paired for v in c.of(FEW) if v.paired is not None]
    suspect = [v.paired for v in c.of(SUSPECT) if v.paired is not None]
    for v in c.of(NOISE):
        e = v.paired
        if e is None or not e.beyond_chance:
            continue
        why = (
            f"its avg_kl_div {sci(e.level)} is below the {STRAY_ULP_FLOOR:g} stray-ulp floor "
            "where no state bug sits"
            if e.level <= STRAY_ULP_FLOOR
            else f"by x{e.ratio:.3g} per sample, within the x{MIN_RATIO:g} drift that longer "
            "or different contexts give kernel noise"
        )
        evidence.append(f"{e.helper} is above match beyond chance but {why}: kernel noise")
    for e in suspect:
        evidence.append(_affected_line(cache[e.helper], e))
    mlevel = level_of(match)
    level = sci(mlevel)
    failing = c.failing()
    step, cmd, action = _condition1_advice(server, info, match, failing, c.uncovered())
    suspects = _kernel_suspects(info, c.store)
    gate_ok = match.summary is not None and match.summary.result == "pass"
    if state:
        names = [e.helper for e in state]
        for e in state:
            if e.affected and e.up < e.n:
                evidence.append(_affected_line(cache[e.helper], e))
        evidence += [x for h in names for x in _shape(cache[h], c.page)]
        top = max(state, key=lambda e: e.level)
        if gate_ok and top.level >= PRIMARY_RATIO * max(mlevel, STRAY_ULP_FLOOR):
            return Diagnosis(
                server,
                2,
                [1, 2],
                f"condition 2 first (state bug): {' and '.join(names)} "
                f"{'are' if len(names) > 1 else 'is'} orders of magnitude above match "
                f"({sci(top.level)} vs {level}) while match is within its gate: a state bug "
                f"on {path_of(names[0])}; match's own kernel noise (condition 1) is small "
                "beside it" + c.tail(),
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
            f"{path_of(names[0])}; fix condition 1 first, its noise hides the rest" + c.tail(),
            evidence,
            suspects + _state_suspects(names, info),
            step,
            cmd,
            action,
        )
    if suspect:
        e = max(suspect, key=lambda e: e.up)
        fails = [h for h in failing if h in (x.helper for x in suspect)]
        gate = (
            f"{' and '.join(fails)} fail{'s' if len(fails) == 1 else ''} {'its' if len(fails) == 1 else 'their'} gate; cause undetermined: "
            if fails
            else ""
        )
        need = max(MIN_COMMON, e.down + MIN_COMMON)
        rerun = 4 * max(e.n, 32)
        if e.beyond_chance and e.large:
            # above match in most samples, not in a few: the open question is the size of the
            # shift against the tolerated drift, which more samples decide, not more like some
            what = (
                f"{e.helper} is above match in {e.higher} of {e.n} samples (signed-rank "
                f"p={e.p:.2g}), typically x{e.ratio:.3g}, but not beyond a x{MIN_RATIO:g} drift "
                f"at p<{EVIDENCE_P:g} (p={e.shift_p:.2g}): a broad excess that is neither "
                "shown to be a state bug nor the drift that longer contexts give kernel noise"
            )
            decide = (
                f"decide it with more samples (`--samples {rerun}`): a shift of x{e.ratio:.3g} "
                f"that is real passes the x{MIN_RATIO:g}-drift test as samples grow; then: {step}"
            )
        else:
            what = (
                f"{e.helper} is far above it on {e.up} sample{'s' if e.up != 1 else ''} and far "
                f"below on {e.down} (sign test p={e.tail_p:.2g}): what a state bug in a few "
                "samples looks like, too few to tell from chance"
            )
            decide = (
                f"decide it with more prompts like the affected ones (see evidence): at least "
                f"{need} samples far above match and none below reach p<{EVIDENCE_P:g}; then: "
                f"{step}"
            )
        return Diagnosis(
            server,
            None,
            [1],
            f"inconclusive: {gate}match diverges ({level}) and {what}" + c.tail(),
            evidence,
            suspects + _state_suspects([e.helper], info),
            decide,
            rerun_command(server, rerun),
        )
    if few:
        n = min(e.n for e in few)
        return Diagnosis(
            server,
            None,
            [1],
            f"inconclusive (n too small): match diverges ({level}), and whether "
            f"{' and '.join(e.helper for e in few)} add{'s' if len(few) == 1 else ''} a state "
            f"bug cannot be told on {n} common samples (at least {MIN_COMMON} needed)" + c.tail(),
            evidence,
            suspects,
            f"re-run with more samples (`--samples 32`); then: {step}",
            rerun_command(server, 32),
        )
    clean = [h for h, st in cache.items() if exact[h]]
    dirty = [h for h in cache if not exact[h]]
    det = info.enable_deterministic_inference
    if cache and len(clean) == len(cache):
        label = (
            f"condition 1 on match's path only: match diverges ({level}) while "
            f"{' and '.join(clean)} {'are' if len(clean) > 1 else 'is'} bit-identical, so the "
            "restored-prefix paths agree and a kernel is shape-variant only on the cold "
            "prefill-then-decode path"
        )
    elif not cache:
        ran = [h for h in c.uncovered() if h in cache_helpers()]
        label = f"condition 1: match diverges ({level}); condition 2 not tested: " + (
            f"{' and '.join(ran)} ran but compared nothing, so whether a state bug hides "
            "under this noise is unknown"
            if ran
            else "run the cache-hit helpers to see whether a state bug hides under this noise"
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
    if failing:
        label += f"; {' and '.join(failing)} fail{'s' if len(failing) == 1 else ''} the gate"
    return Diagnosis(server, 1, [1], label + c.tail(), evidence, suspects, step, cmd, action)


def _affected_line(st: HelperState, e) -> str:
    """The samples far above match, and what they share that the others do not."""
    s = HelperView.of(st).summary
    common = [i for i in st.book.order]
    rows = {p.get("index"): p for p in s.per_sample if isinstance(p, dict)}
    ids = [common[i] for i in e.affected if i < len(common)]
    listed = ", ".join(
        f"#{i} (prompt {rows[i].get('prompt_len')}, cached {rows[i].get('cached_tokens')})"
        if i in rows
        else f"#{i}"
        for i in ids[:8]
    )
    more = f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    line = f"{st.helper}: far above match on {listed}{more}"
    shared = affected_in_common(st, ids, rows)
    return line + (
        f"; {shared}" if shared else "; no prompt length, context or cache figure sets them apart"
    )


def _no_more(excess: list) -> str:
    """What the cache-hit helpers showed against match, claiming no more than was tested."""
    verb = "stays" if len(excess) == 1 else "stay"
    if not excess or any(e.too_few for e in excess):  # too few to test: only the floor speaks
        return f"{verb} at or below the {STRAY_ULP_FLOOR:g} stray-ulp floor"
    if all(e.equal == e.n for e in excess):
        return (
            f"{verb} at rounding level with match on every sample (both below the "
            f"{STRAY_ULP_FLOOR:g} floor)"
        )
    return (
        f"{'is' if len(excess) == 1 else 'are'} not above it on the same prompts beyond chance "
        f"(p<{EVIDENCE_P:g}) nor beyond a x{MIN_RATIO:g} drift"
    )


# Engines that are compared with, never diagnosed: the diagnosis reads SGLang's own helpers
# (match and the cache paths), which a vLLM baseline or the HF reference never runs; a helper
# that scores one of them (hf_reference's vLLM pair) is shown by that helper's own view.
_BASELINE_ENGINES = ("vllm", "hf")


def diagnose(store: SessionStore) -> list[Diagnosis]:
    """One diagnosis per server a helper ran on, in the order they first ran (baselines and
    the reference excepted)."""
    servers = list(dict.fromkeys(st.server for st in store.helpers.values()))
    servers = [s for s in servers if store.identity(s).get("engine") not in _BASELINE_ENGINES]
    return [diagnose_server(store, s) for s in servers]


def bit_identical(prev: SessionStore, cur: SessionStore) -> bool | None:
    """Whether every per-token value of this run equals the previous run's (None: not
    comparable, e.g. different helpers or samples). See `compare.rerun_equality`."""
    return rerun_equality(prev, cur).identical
