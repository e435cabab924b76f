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

import math
import shlex
from dataclasses import asdict, dataclass, field

import numpy as np

from kltui.fmt import sci
from kltui.helpers.registry import HELPERS, same_engine
from kltui.metrics.presets import DETERMINISTIC_KL_DIV
from kltui.session.compare import rerun_equality
from kltui.session.store import HelperState, SessionStore

# "measured 0; any state bug produces values orders of magnitude higher" (the guide's 1e-9)
STRAY_ULP_FLOOR = DETERMINISTIC_KL_DIV
# chance, under kernel noise alone, below which a cache-hit helper's excess counts as evidence
EVIDENCE_P = 1e-3
CACHE_HELPERS = ("prefill_cache_hit", "decode_cache_hit")  # the helpers named in the rules below
UNUSABLE = ("error", "invalid", "vacuous")

PATH_OF = {name: h.path for name, h in HELPERS.items() if h.path}


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


# --------------------------------------------------------------------------- evidence
def _usable(st: HelperState) -> bool:
    s = st.summary
    return s is not None and s.status not in UNUSABLE and bool(s.scored)


def _exact(st: HelperState) -> bool:
    return (st.summary.samples_with_difference or 0) == 0


def _count_line(st: HelperState) -> str:
    s = st.summary
    fd = s.first_divergence
    where = f", first divergence sample {fd['sample']} @ {fd['position']}" if fd else ""
    return (
        f"{st.helper}: {(s.samples_with_difference or 0)}/{s.scored} samples differ, "
        f"avg_kl_div {sci(s.avg_kl_div)}, max k3 {sci(s.max_k3)}{where}"
    )


def sign_test_p(higher: int, lower: int) -> float:
    """One-sided chance of >= `higher` wins out of higher+lower fair coin flips."""
    n = higher + lower
    if n == 0:
        return 1.0
    return sum(math.comb(n, j) for j in range(higher, n + 1)) / 2**n


def exceedance_p(k: int, n_x: int, n_y: int) -> float:
    """Chance that the k largest of n_x + n_y exchangeable values all come from the n_x group:
    C(n_x, k) / C(n_x + n_y, k). No distribution assumed, only that both sets are alike."""
    if k <= 0:
        return 1.0
    j = np.arange(k, dtype=np.float64)
    return float(np.exp(np.sum(np.log(n_x - j) - np.log(n_x + n_y - j))))


@dataclass
class Excess:
    """A cache-hit helper against match on the same prompts."""

    helper: str
    higher: int
    lower: int
    equal: int
    p_sign: float
    above: int  # tokens above match's largest k3
    p_tail: float
    level: float

    @property
    def significant(self) -> bool:
        return min(self.p_sign, self.p_tail) < EVIDENCE_P and self.level > STRAY_ULP_FLOOR

    def line(self) -> str:
        return (
            f"{self.helper} vs match on {self.higher + self.lower + self.equal} common samples: "
            f"higher in {self.higher}, lower in {self.lower}, equal in {self.equal} "
            f"(sign test p={self.p_sign:.2g}); {self.above} tokens above match's largest k3 "
            f"(p={self.p_tail:.2g})"
        )


def excess_over_match(st: HelperState, match: HelperState) -> Excess:
    a, m = st.book.samples, match.book.samples
    common = [s for s in st.book.order if s in m]
    mine = np.array([a[s].metrics.mean_k3 for s in common])
    theirs = np.array([m[s].metrics.mean_k3 for s in common])
    higher = int(np.count_nonzero(mine > theirs))
    lower = int(np.count_nonzero(mine < theirs))
    k3_m = np.concatenate([s.k3 for s in m.values()]) if m else np.zeros(0)
    k3_h = np.concatenate([s.k3 for s in a.values()]) if a else np.zeros(0)
    k3_m, k3_h = k3_m[np.isfinite(k3_m)], k3_h[np.isfinite(k3_h)]
    top = float(k3_m.max()) if k3_m.size else 0.0
    above = int(np.count_nonzero(k3_h > top))
    level = float(st.summary.avg_kl_div or 0.0)
    return Excess(
        st.helper,
        higher,
        lower,
        len(common) - higher - lower,
        sign_test_p(higher, lower),
        above,
        exceedance_p(above, k3_h.size, k3_m.size),
        level if math.isfinite(level) else math.inf,
    )


def _shape(st: HelperState, page_size: int | None) -> list[str]:
    """Which sequences diverge and where in generation: the two questions the KL guide asks."""
    s = st.summary
    helper = st.helper
    rows = [p for p in s.per_sample if p.get("n_nonzero")]
    scored = s.scored or 0
    if not rows or not scored:
        return []
    out = []
    if len(rows) <= scored / 4:
        bad = ", ".join(
            f"#{p['index']} (prompt {p['prompt_len']}, cached {p['cached_tokens']})"
            for p in rows[:6]
        )
        out.append(
            f"{helper}: divergence is concentrated in {len(rows)} of {scored} requests: {bad}; "
            "compare their prompt length, cached_tokens and page residue with the passing ones"
        )
    if isinstance(page_size, int) and page_size > 1:
        passing = [p for p in s.per_sample if not p.get("n_nonzero")]

        def residues(ps: list[dict]) -> str:
            vals = sorted({int(p["cached_tokens"]) % page_size for p in ps})
            return ", ".join(map(str, vals[:8])) + (" …" if len(vals) > 8 else "")

        if passing:
            out.append(
                f"{helper}: cached_tokens % page size {page_size}: divergent {{{residues(rows)}}}"
                f", passing {{{residues(passing)}}}"
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


# --------------------------------------------------------------------------- advice
def _flag(info: dict, key: str) -> bool | None:
    v = info.get(key)
    return None if v is None else bool(v)


def _settings_line(info: dict) -> str | None:
    if not info:
        return None
    parts = []
    for label, key in (
        ("deterministic inference", "enable_deterministic_inference"),
        ("attention backend", "attention_backend"),
        ("cuda graph", "cuda_graph"),
        ("page size", "page_size"),
        ("radix cache", "disable_radix_cache"),
        ("chunked prefill", "chunked_prefill_size"),
        ("tp", "tp_size"),
    ):
        v = info.get(key)
        if v is None:
            continue
        if key == "disable_radix_cache":
            v = "off" if v else "on"
        elif isinstance(v, bool):
            v = "on" if v else "off"
        parts.append(f"{label} {v}")
    return "server reports: " + ", ".join(parts) if parts else None


def _longest(store: SessionStore) -> int | None:
    run = store.run
    if run is None:
        return None
    longest_prompt = run.prompt_set.get("max_len")
    new = run.config.get("max_new_tokens")
    if isinstance(longest_prompt, int) and isinstance(new, int):
        return longest_prompt + new
    return None


def _kernel_suspects(info: dict, store: SessionStore) -> list[str]:
    out = []
    det = _flag(info, "enable_deterministic_inference")
    backend = info.get("attention_backend")
    name = f"the {backend} attention backend" if backend else "the attention backend"
    if det is False:
        out.append(
            "deterministic inference is off: GEMMs and reductions choose tiles and split "
            "counts by batch shape, so prefill and decode round differently (expected noise)"
        )
    out.append(
        f"decode vs extend attention in {name}: one query against many takes another kernel or "
        "code path; a reduction over the KV range whose blocking follows the query count or "
        "the sequence length (split-KV) reduces the same token in another order (fix the "
        "shape, e.g. a fixed split size, not only the order)"
    )
    tp = info.get("tp_size")
    if isinstance(tp, int) and tp > 1:
        out.append(
            f"tp {tp}: all-reduce whose algorithm or tree follows the message size (a prefill of "
            "many tokens vs a decode step of one)"
        )
    chunk = info.get("chunked_prefill_size")
    longest = _longest(store)
    if isinstance(chunk, int) and chunk > 0 and longest is not None and longest > chunk:
        out.append(
            f"chunked prefill {chunk}: the fresh prefill of prompt + output (up to {longest} "
            "tokens) runs in chunks, so later chunks use extend attention over a cached prefix"
        )
    if _flag(info, "cuda_graph"):
        out.append(
            "CUDA graph is on: decode replays graphs captured at padded batch sizes; dumper "
            "hooks do not run inside a replay, so confirm the divergence with "
            "--disable-cuda-graph --disable-prefill-cuda-graph before dumping"
        )
    if det:
        out.append(
            "kernels outside batch_invariant_ops: deterministic inference swaps aten ops; custom "
            "kernels that never go through aten stay shape-dependent"
        )
    return out


def _state_suspects(dirty: list[str], info: dict) -> list[str]:
    out = []
    page = info.get("page_size")
    if "prefill_cache_hit" in dirty:
        out.append(PATH_OF["prefill_cache_hit"])
        if isinstance(page, int) and page > 1:
            out.append(f"page-granular restore (page size {page}): hits end on page boundaries")
    elif "decode_cache_hit" in dirty:
        out.append(PATH_OF["decode_cache_hit"])
    return out


def dumps_command(server: str, dump_dir: str = "DIR") -> str:
    host = server.split("://", 1)[-1].rstrip("/")
    return f"kltui dumps --server {host} --dump-dir {shlex.quote(dump_dir)}"


def _condition1_advice(server: str, info: dict) -> tuple[str, str | None, str | None]:
    """(next step, exact command, TUI action) for kernel noise, from what the server runs."""
    det = _flag(info, "enable_deterministic_inference")
    if det:
        cmd = dumps_command(server)
        return (
            "find the kernel: relaunch this server with SGLang's dumper hooks and run "
            f"`{cmd}`; the first module whose inputs are bit-identical and whose output "
            "differs is the shape-variant kernel",
            cmd,
            "dumps",
        )
    if det is False:
        return (
            "relaunch with --enable-deterministic-inference (off on this server) and re-run; "
            "what survives it is a shape-variant kernel to find with `kltui dumps`",
            None,
            None,
        )
    return (
        "/server_info does not say whether deterministic inference is on: check the launch "
        "flags; with it on, what survives is a shape-variant kernel to find with `kltui dumps`",
        None,
        None,
    )


CONDITION2_STEP = (
    "isolate the trigger: run the same prompts on a second server that changes one setting "
    "(page size, radix cache) with `kltui check --server A --server B` and read cross_server "
    "(bit-identical values across configs mean a deterministic logic fault, not a race); then "
    "probe the reused state of the divergent requests (slot, claimed cached length) directly"
)


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
