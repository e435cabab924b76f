"""Server A against server B on the same prompt ids, per helper and per token, and what the
pattern of differences means.

`identical` is True only when every helper ran on both servers with at least one common scored
sample and each is bit-identical there; False as soon as one compared helper differs (a found
difference is evidence on its own); otherwise None, with every helper left uncompared named in
`uncompared` with why. The reading follows from which helpers differ: match differs -> kernels
(batch variance) or races; match bit-identical but a cache helper differs -> a state bug on one
server's cache path, unless both servers' avg_kl_div on that helper stays at or below the
1e-9 stray-ulp floor (then it is rounding on that path's shapes, never a state bug); different
models -> nothing about kernels or state at all.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from kltui.engines.identity import EngineName
from kltui.readings.compare import BookDiff, compare_books
from kltui.readings.coverage import Untested, coverage_of
from kltui.readings.evidence import level_of
from kltui.readings.identity import ModelCheck, ModelState, model_check
from kltui.readings.paired import STRAY_ULP_FLOOR
from kltui.registry import baseline_path, path_of, same_engine
from kltui.session.servers import COMPARED
from kltui.session.store import HelperState, SessionStore, helper_key

LABELS = ("A", "B")


@dataclass(frozen=True)
class HelperComparison:
    """One helper compared between server A and server B, over the samples both scored."""

    diff: BookDiff
    avg_kl_div: tuple[float | None, float | None]  # A's, B's (None: no summary)
    cached_tokens_differ_samples: int  # common samples whose cache hit covered other tokens
    # both servers' own level (avg_kl_div) on this helper at or below the stray-ulp floor: a
    # difference between them is rounding, since no state bug sits that low
    below_floor: bool = False

    @property
    def identical(self) -> bool | None:
        """True when bit-identical on every common sample; None when none is common."""
        return self.diff.identical

    def to_json(self) -> dict[str, Any]:
        """The comparison as the JSON result writes it (docs/JSON.md)."""
        d = self.diff.to_dict()
        d["avg_kl_div"] = list(self.avg_kl_div)
        d["cached_tokens_differ_samples"] = self.cached_tokens_differ_samples
        return d


@dataclass(frozen=True)
class ServerPair:
    """Server A against server B, per helper, and what the pattern of differences means."""

    servers: tuple[str, str]  # A, B
    identical: bool | None  # see the module's docstring
    same_model: bool | None  # None when either server's identity is unknown or unverified
    settings_differ: dict[str, tuple[Any, Any]]  # compared setting -> (A's, B's)
    uncompared: dict[str, tuple[Missing, ...]]  # helper -> why it was not compared, per side
    helpers: dict[str, HelperComparison]
    reading: PairReading  # words/cross_server.py says it
    model_check: ModelCheck | None = None  # same / different / unverified weights, with why


def _servers(store: SessionStore) -> list[str]:
    """SGLang servers of the run in the order given (a server that never answered included),
    then any other server a helper ran on (recordings without identities)."""
    urls = [
        s.url for s in store.identities() if s.engine == EngineName.SGLANG and s.url is not None
    ]
    urls += [st.server for st in store.helpers.values() if same_engine(st.helper)]
    return list(dict.fromkeys(urls))


def _expected(store: SessionStore, x: str, y: str) -> list[str]:
    """The same-engine helpers the run asked for, then any other that ran on x or y."""
    names = [h for h in store.config.helpers if same_engine(h)]
    names += [st.helper for st in store.helpers.values() if st.server in (x, y)]
    return [h for h in dict.fromkeys(names) if same_engine(h)]


class MissingKind(StrEnum):
    """Why a helper has no scored sample on one server of a pair."""

    ERRORED_BEFORE = "errored before"  # the server errored before the helper ran
    NOT_RUN_YET = "not run yet"  # the run still goes (the TUI's live view)
    DID_NOT_RUN = "did not run"
    ERRORED_IN = "errored in"  # the server errored during the helper (`phase`)
    SKIPPED = "skipped"  # every sample it started skipped (`skipped`)
    SAID = "said"  # the helper said why before any request (vacuous, invalid: `reason`)
    STILL_RUNNING = "still running"
    DID_NOT_FINISH = "did not finish"
    NO_SCORED = "no scored samples"
    NOT_TESTED = "not tested"  # coverage's rule: too little of its path tested (`untested`)
    NO_COMMON = "no common sample"  # both scored, never the same sample


@dataclass(frozen=True)
class Skipped:
    """A helper's skipped samples on one server: each reason's lead and its count (most common
    first); with one reason, the first skipped sample and the rest of its reason."""

    count: int
    n_samples: int
    kinds: tuple[tuple[str, int], ...]
    sample: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class Missing:
    """Why one helper was not compared, on one side of the pair (`label`: A or B)."""

    kind: MissingKind
    helper: str
    label: str = ""
    phase: str | None = None
    reason: str | None = None  # SAID: the helper's own reason (recorded text)
    untested: Untested | None = None  # NOT_TESTED: coverage's finding
    skipped: Skipped | None = None


def _skipped(st: HelperState) -> Skipped:
    kinds = Counter(r.split(" (")[0] for r in st.skipped.values())
    if len(kinds) != 1:
        return Skipped(len(st.skipped), st.n_samples, tuple(kinds.most_common()))
    kind = next(iter(kinds))
    sample, reason = next(iter(st.skipped.items()))
    detail = reason[len(kind) :].strip(" ()")
    return Skipped(len(st.skipped), st.n_samples, ((kind, len(st.skipped)),), sample, detail)


def _missing(store: SessionStore, helper: str, server: str, label: str) -> Missing | None:
    """Why `helper` has no scored sample on `server` (None when it has some)."""
    st = store.helpers.get(helper_key(helper, server))
    if st is None:
        if store.fatal(server) is not None:
            return Missing(MissingKind.ERRORED_BEFORE, helper, label)
        if store.finished is None:  # the TUI's view of a run still going
            return Missing(MissingKind.NOT_RUN_YET, helper, label)
        return Missing(MissingKind.DID_NOT_RUN, helper, label)
    if st.book.samples:
        return None
    p = store.fatal(server, helper)
    if st.phase == "error" or p is not None:
        return Missing(MissingKind.ERRORED_IN, helper, label, p.phase if p is not None else None)
    if st.skipped:
        return Missing(MissingKind.SKIPPED, helper, label, skipped=_skipped(st))
    reason = st.summary.reason if st.summary is not None else None
    if reason:  # vacuous (radix cache off) or invalid, said before any request
        return Missing(MissingKind.SAID, helper, label, reason=reason)
    if st.summary is None:
        going = store.finished is None
        kind = MissingKind.STILL_RUNNING if going else MissingKind.DID_NOT_FINISH
        return Missing(kind, helper, label)
    return Missing(MissingKind.NO_SCORED, helper, label)


def _cached_differ(x: HelperState, y: HelperState, samples: list[int]) -> int:
    """Common samples whose cache hit covered a different number of tokens on the two servers."""
    return sum(
        1 for s in samples if x.book.samples[s].cached_tokens != y.book.samples[s].cached_tokens
    )


def server_pair(store: SessionStore, x: str, y: str) -> ServerPair:
    """Server x (A) against server y (B), per helper, on the same prompt ids."""
    ix, iy = store.identity(x), store.identity(y)
    differ = {k: (ix.get(k), iy.get(k)) for k in COMPARED if ix.get(k) != iy.get(k)}
    helpers: dict[str, HelperComparison] = {}
    uncompared: dict[str, tuple[Missing, ...]] = {}
    for name in _expected(store, x, y):
        why = [_missing(store, name, s, lab) for s, lab in zip((x, y), LABELS, strict=True)]
        if gone := tuple(w for w in why if w is not None):
            uncompared[name] = gone
            continue
        sx, sy = store.helpers[helper_key(name, x)], store.helpers[helper_key(name, y)]
        # coverage's one rule: a side that tested too little of its path is no evidence
        thin = tuple(
            Missing(MissingKind.NOT_TESTED, name, lab, untested=w)
            for st, lab in ((sx, LABELS[0]), (sy, LABELS[1]))
            if (w := coverage_of(st)) is not None
        )
        if thin:
            uncompared[name] = thin
            continue
        diff = compare_books(sx.book, sy.book)
        helpers[name] = HelperComparison(
            diff,
            (
                sx.summary.avg_kl_div if sx.summary else None,
                sy.summary.avg_kl_div if sy.summary else None,
            ),
            _cached_differ(sx, sy, [s.sample for s in diff.samples]),
            max(level_of(sx), level_of(sy)) <= STRAY_ULP_FLOOR,
        )
        if diff.identical is None:
            uncompared[name] = (Missing(MissingKind.NO_COMMON, name),)
    verdicts = [h.identical for h in helpers.values() if h.identical is not None]
    if False in verdicts:
        identical = False
    elif verdicts and not uncompared:
        identical = True
    else:
        identical = None
    check = model_check(ix, iy) if ix and iy else None
    models = check if check is not None and check.state == ModelState.DIFFERENT else None
    reading = _reading(helpers, uncompared, differ, identical, models)
    if check is not None and check.state == "unverified":
        # the same name is not the same weights: every reading below holds only if they are
        reading = replace(reading, unverified=check)
    return ServerPair(
        servers=(x, y),
        identical=identical,
        same_model=None if check is None else check.same,
        settings_differ=differ,
        uncompared=uncompared,
        helpers=helpers,
        reading=reading,
        model_check=check,
    )


class PairKind(StrEnum):
    """What the pattern of differences between two servers means."""

    DIFFERENT_MODELS = "different models"  # compared under --allow-different-models
    NOTHING_COMPARED = "nothing compared"
    PARTLY_IDENTICAL = "bit-identical where compared"  # others not compared
    IDENTICAL_EXACT = "bit-identical, every path exact"
    IDENTICAL_SAME_SETTINGS = "bit-identical, same settings"
    # bit-identical although settings differ, some helpers diverging (deterministically):
    IDENTICAL_KERNEL = "bit-identical, a kernel"  # the baseline diverges too (condition 1)
    IDENTICAL_ROUNDING = "bit-identical, rounding"  # the baseline exact, the rest at the floor
    IDENTICAL_LOGIC_FAULT = "bit-identical, a logic fault"  # the baseline exact (condition 2)
    IDENTICAL_NO_BASELINE = "bit-identical, no baseline"  # the baseline did not run
    KERNELS = "kernels or races"  # the baseline path differs between servers
    CACHE_PATH = "a cache path differs"  # the baseline identical, a cache path not
    BASELINE_NOT_COMPARED = "baseline not compared"


class SuspectKind(StrEnum):
    """What a helper that differs (or diverges) between servers points at."""

    ROUNDING = "rounding"  # at or below the stray-ulp floor on both: no state bug
    BOTH_DIVERGE = "both diverge"  # neither server singled out
    ONE_SERVER = "one server"  # a state bug on `server`'s path (condition 2)
    EITHER = "either server"  # a state bug on one server's path, which one unknown


@dataclass(frozen=True)
class Suspect:
    """One helper's part in the reading, with the figures it rests on."""

    helper: str
    kind: SuspectKind
    levels: tuple[float | None, float | None]  # avg_kl_div on A and B
    path: str  # the path the helper exercises (registry)
    server: str | None = None  # ONE_SERVER: "A" or "B"


@dataclass(frozen=True)
class PairReading:
    """The reading of a pair: its kind and the helpers and settings it names."""

    kind: PairKind
    base: str  # the registry's baseline path helper (match)
    changed: tuple[str, ...] = ()  # settings that differ
    compared: tuple[str, ...] = ()
    uncompared: tuple[str, ...] = ()
    differing: tuple[str, ...] = ()  # compared helpers that differ between the servers
    diverging: tuple[str, ...] = ()  # IDENTICAL_*: helpers above 0 on a server
    suspects: tuple[Suspect, ...] = ()  # CACHE_PATH: each differing helper; IDENTICAL_*: rounding
    shapes: tuple[str, ...] = ()  # CACHE_PATH: other cached lengths, the baseline not exact
    identical: bool | None = None  # DIFFERENT_MODELS: bit-identical all the same
    models: ModelCheck | None = None  # DIFFERENT_MODELS: what shows it
    unverified: ModelCheck | None = None  # the same name, weights not verified


def _suspect(name: str, c: HelperComparison) -> Suspect:
    """Which server's `name` path holds the state bug: the one whose own comparison on that
    path diverges while the other's stays at or below the floor; when both diverge, neither
    is singled out (a larger level is no evidence that the other path is sound)."""
    a, b = c.avg_kl_div
    path = path_of(name)
    if c.below_floor:
        return Suspect(name, SuspectKind.ROUNDING, c.avg_kl_div, path)
    if isinstance(a, float) and isinstance(b, float) and a != b:
        if min(a, b) > STRAY_ULP_FLOOR:
            return Suspect(name, SuspectKind.BOTH_DIVERGE, c.avg_kl_div, path)
        return Suspect(name, SuspectKind.ONE_SERVER, c.avg_kl_div, path, "A" if a > b else "B")
    return Suspect(name, SuspectKind.EITHER, c.avg_kl_div, path)


def _reading(
    helpers: dict[str, HelperComparison],
    uncompared: dict[str, tuple[Missing, ...]],
    differ: dict[str, tuple[Any, Any]],
    identical: bool | None,
    models: ModelCheck | None,
) -> PairReading:
    """What the pattern of differences between the two servers means."""
    compared = {h: c for h, c in helpers.items() if c.identical is not None}
    base = baseline_path()  # the registry's baseline path: a difference there is the kernels'
    reading = PairReading(
        PairKind.NOTHING_COMPARED, base, tuple(differ), tuple(compared), tuple(uncompared)
    )
    if models is not None:
        return replace(reading, kind=PairKind.DIFFERENT_MODELS, identical=identical, models=models)
    if not compared:
        return reading
    differing = tuple(h for h, c in compared.items() if c.identical is False)
    if not differing:
        if uncompared:
            return replace(reading, kind=PairKind.PARTLY_IDENTICAL)
        return _all_identical(reading, helpers)
    reading = replace(reading, differing=differing)
    if base in differing:
        return replace(reading, kind=PairKind.KERNELS)
    if base not in compared:
        return replace(reading, kind=PairKind.BASELINE_NOT_COMPARED)
    exact = all(v == 0.0 for v in compared[base].avg_kl_div)
    shapes = tuple(
        h
        for h in differing
        if helpers[h].cached_tokens_differ_samples and not helpers[h].below_floor
    )
    return replace(
        reading,
        kind=PairKind.CACHE_PATH,
        suspects=tuple(_suspect(h, helpers[h]) for h in differing),
        shapes=() if exact else shapes,
    )


def _all_identical(reading: PairReading, helpers: dict[str, HelperComparison]) -> PairReading:
    """Every helper compared and bit-identical: what their own levels say."""
    diverging = tuple(
        h for h, c in helpers.items() if any(isinstance(v, float) and v > 0 for v in c.avg_kl_div)
    )
    reading = replace(reading, diverging=diverging)
    base = reading.base
    if not diverging:
        return replace(reading, kind=PairKind.IDENTICAL_EXACT)
    if not reading.changed:
        return replace(reading, kind=PairKind.IDENTICAL_SAME_SETTINGS)
    if base in diverging:
        # Measured on an H200 (docs/FIELD_NOTES.md): a decode-vs-extend attention kernel gave
        # the same bits with CUDA graphs on and off; only a logic fault reading would be wrong.
        return replace(reading, kind=PairKind.IDENTICAL_KERNEL)
    if base not in helpers:
        return replace(reading, kind=PairKind.IDENTICAL_NO_BASELINE)
    # the floor holds here as in every reading of condition 2
    rounding = tuple(_suspect(h, helpers[h]) for h in diverging if helpers[h].below_floor)
    kind = (
        PairKind.IDENTICAL_ROUNDING
        if len(rounding) == len(diverging)
        else PairKind.IDENTICAL_LOGIC_FAULT
    )
    return replace(reading, kind=kind, suspects=rounding)


def cross_server(store: SessionStore) -> list[ServerPair]:
    """Every other server against the first one, per helper and per token."""
    servers = _servers(store)
    return [server_pair(store, servers[0], y) for y in servers[1:]]
