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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kltui.fmt import sci
from kltui.readings.compare import BookDiff, compare_books
from kltui.readings.coverage import untested
from kltui.readings.evidence import level_of
from kltui.readings.identity import ModelCheck, model_check, models_differ
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
    uncompared: dict[str, str]  # helper -> why it was not compared
    helpers: dict[str, HelperComparison]
    reading: str
    model_check: ModelCheck | None = None  # same / different / unverified weights, with why

    def to_json(self) -> dict[str, Any]:
        """The pair as the JSON result's `cross_server` entry (docs/JSON.md)."""
        return {
            "servers": list(self.servers),
            "identical": self.identical,
            "same_model": self.same_model,
            "model_check": self.model_check.to_json() if self.model_check else None,
            "settings_differ": {k: list(v) for k, v in self.settings_differ.items()},
            "uncompared": dict(self.uncompared),
            "helpers": {h: c.to_json() for h, c in self.helpers.items()},
            "reading": self.reading,
        }


def _servers(store: SessionStore) -> list[str]:
    """SGLang servers of the run in the order given (a server that never answered included),
    then any other server a helper ran on (recordings without identities)."""
    urls = [s.url for s in store.identities() if s.engine == "sglang" and s.url is not None]
    urls += [st.server for st in store.helpers.values() if same_engine(st.helper)]
    return list(dict.fromkeys(urls))


def _expected(store: SessionStore, x: str, y: str) -> list[str]:
    """The same-engine helpers the run asked for, then any other that ran on x or y."""
    names = [h for h in store.config.helpers if same_engine(h)]
    names += [st.helper for st in store.helpers.values() if st.server in (x, y)]
    return [h for h in dict.fromkeys(names) if same_engine(h)]


def _skipped(st: HelperState) -> str:
    kinds = Counter(r.split(" (")[0] for r in st.skipped.values())
    if len(kinds) == 1:
        sample, reason = next(iter(st.skipped.items()))
        detail = reason[len(next(iter(kinds))) :].strip(" ()")
        kind = next(iter(kinds))
        shown = f"{kind} (sample {sample}: {detail})" if detail else kind
    else:
        shown = ", ".join(f"{k} x{n}" for k, n in kinds.most_common())
    if len(st.skipped) >= st.n_samples:
        return f"every sample skipped: {shown}"
    return f"{len(st.skipped)} of {st.n_samples} samples skipped: {shown}"


def _missing(store: SessionStore, helper: str, server: str, label: str) -> str | None:
    """Why `helper` has no scored sample on `server` (None when it has some)."""
    st = store.helpers.get(helper_key(helper, server))
    if st is None:
        if store.fatal(server) is not None:
            return f"{label} errored before {helper}"
        if store.finished is None:  # the TUI's view of a run still going
            return f"{helper} has not run on {label} yet"
        return f"{helper} did not run on {label}"
    if st.book.samples:
        return None
    p = store.fatal(server, helper)
    if st.phase == "error" or p is not None:
        phase = f" (phase {p.phase})" if p is not None and p.phase else ""
        return f"{label} errored in {helper}{phase}"
    if st.skipped:
        return f"no scored samples on {label} ({_skipped(st)})"
    reason = st.summary.reason if st.summary is not None else None
    if reason:  # vacuous (radix cache off) or invalid, said before any request
        return f"no scored samples on {label} ({reason.removeprefix(f'{helper} is ')})"
    if st.summary is None:
        going = store.finished is None
        return f"{helper} {'is still running' if going else 'did not finish'} on {label}"
    return f"no scored samples on {label}"


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
    uncompared: dict[str, str] = {}
    for name in _expected(store, x, y):
        why = [_missing(store, name, s, lab) for s, lab in zip((x, y), LABELS, strict=True)]
        if any(why):
            uncompared[name] = "; ".join(w for w in why if w)
            continue
        sx, sy = store.helpers[helper_key(name, x)], store.helpers[helper_key(name, y)]
        # coverage's one rule: a side that tested too little of its path is no evidence
        thin = [
            f"not tested on {lab} ({w})"
            for st, lab in ((sx, LABELS[0]), (sy, LABELS[1]))
            if (w := untested(st)) is not None
        ]
        if thin:
            uncompared[name] = "; ".join(thin)
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
            uncompared[name] = "no sample scored on both servers"
    verdicts = [h.identical for h in helpers.values() if h.identical is not None]
    if False in verdicts:
        identical = False
    elif verdicts and not uncompared:
        identical = True
    else:
        identical = None
    models = models_differ(ix, iy) if ix and iy else None
    check = model_check(ix, iy) if ix and iy else None
    reading = _reading(helpers, uncompared, differ, identical, models)
    if check is not None and check.state == "unverified":
        # the same name is not the same weights: every reading below holds only if they are
        reading = f"{reading}; {check.why}: this reading holds only if they are the same"
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


def _helper_list(names: Iterable[str]) -> str:
    return ", ".join(names)


def _levels(c: HelperComparison) -> str:
    a, b = c.avg_kl_div
    return f"avg_kl_div A {sci(a)}, B {sci(b)}"


def _rounding(name: str, c: HelperComparison, verb: str = "differs") -> str:
    """`name` at rounding level on both servers: what it is, and that it is no state bug."""
    return (
        f"{name} {verb} at rounding level (below the {STRAY_ULP_FLOOR:g} floor): not a state "
        f"bug ({_levels(c)}: rounding on that path's shapes)"
    )


def _suspect(name: str, c: HelperComparison) -> str:
    """Which server's `name` path holds the state bug: the one whose own comparison on that
    path diverges while the other's stays at or below the floor; when both diverge, neither
    is singled out (a larger level is no evidence that the other path is sound)."""
    if c.below_floor:
        return _rounding(name, c)
    a, b = c.avg_kl_div
    path = path_of(name)
    if isinstance(a, float) and isinstance(b, float) and a != b:
        if min(a, b) > STRAY_ULP_FLOOR:
            return (
                f"{name} differs between the servers and diverges on both (avg_kl_div A "
                f"{a:.3g}, B {b:.3g}): whatever separates the servers changes what that path "
                f"computes on both rather than confining it to one; each server's own diagnosis "
                f"says whether its {path} holds a state bug"
            )
        label = "A" if a > b else "B"
        return (
            f"{name} differs (avg_kl_div A {a:.3g}, B {b:.3g}): a state bug on {label}'s "
            f"{path} (condition 2)"
        )
    return f"{name} differs: a state bug on the {path} of one server (condition 2)"


def _reading(
    helpers: dict[str, HelperComparison],
    uncompared: dict[str, str],
    differ: dict[str, tuple[Any, Any]],
    identical: bool | None,
    models: str | None,
) -> str:
    """What the pattern of differences between the two servers means."""
    changed = ", ".join(differ) if differ else "no reported setting"
    left = _helper_list(uncompared)
    skipped = f"; not compared: {left}" if uncompared else ""
    compared = {h: c for h, c in helpers.items() if c.identical is not None}
    if models is not None:
        what = (
            "bit-identical, so the weights may be the same under two names"
            if identical
            else "a difference says nothing about kernels or cache state"
        )
        return (
            f"different models ({models}), compared because --allow-different-models was "
            f"given: {what}" + skipped
        )
    if not compared:
        return f"nothing compared: no helper has a sample scored on both servers ({left})"
    differing = [h for h, c in compared.items() if c.identical is False]
    if not differing:
        if uncompared:
            return (
                f"bit-identical on {_helper_list(compared)} only (settings that differ: "
                f"{changed}); not compared: {left}, so nothing is said about "
                + ("its path" if len(uncompared) == 1 else "their paths")
            )
        return _all_identical(helpers, differ, changed)
    base = baseline_path()  # the registry's baseline path: a difference there is the kernels'
    if base in differing:
        others = [h for h in differing if h != base]
        also = f"; {_helper_list(others)} differ too, which {base}'s difference can explain" * bool(
            others
        )
        return (
            f"{base} differs between servers (settings that differ: {changed}): the kernels give "
            "other numbers on the two configurations, so kernels or races (batch variance) are "
            f"involved{also}" + skipped
        )
    if base in compared:
        exact = all(v == 0.0 for v in compared[base].avg_kl_div)
        parts = [_suspect(h, helpers[h]) for h in differing]
        shapes = [
            h
            for h in differing
            if helpers[h].cached_tokens_differ_samples and not helpers[h].below_floor
        ]
        caveat = ""
        if shapes and not exact:
            caveat = (
                f"; but {_helper_list(shapes)} restored a different number of cached tokens on "
                f"the two servers and {base} is not exact, so a batch-variant kernel on the "
                "cache-hit path can explain it too"
            )
        return (
            f"{base} is bit-identical across servers, so their kernels agree; "
            + "; ".join(parts)
            + caveat
            + skipped
        )
    return (
        f"{_helper_list(differing)} differ between servers, but {base} was not compared, so "
        f"kernels cannot be told from cache state: run {base} on both" + skipped
    )


def _all_identical(
    helpers: dict[str, HelperComparison], differ: dict[str, tuple[Any, Any]], changed: str
) -> str:
    diverging = [
        h for h, c in helpers.items() if any(isinstance(v, float) and v > 0 for v in c.avg_kl_div)
    ]
    if not diverging:
        return f"bit-identical across servers (settings that differ: {changed}); every path exact"
    if not differ:
        return (
            "bit-identical across servers, but they report the same settings: run one with a "
            "setting changed (page size, tp, cuda graph) to separate logic from kernels"
        )
    lead = (
        f"bit-identical across servers although {changed} differ, and "
        f"{', '.join(diverging)} still diverge: the divergence is deterministic and does not "
        f"depend on {changed} (not a race, and not that setting)"
    )
    base = baseline_path()
    if base in diverging:
        # Measured on an H200 (docs/FIELD_NOTES.md): a decode-vs-extend attention kernel gave
        # the same bits with CUDA graphs on and off; only a logic fault reading would be wrong.
        return (
            f"{lead}; {base} diverges too, so a kernel on the decode path that both "
            "configurations run with the same shapes is the suspect (condition 1): find it "
            "with kltui dumps"
        )
    if base in helpers:
        state = [h for h in diverging if not helpers[h].below_floor]
        # the floor holds here as in every reading of condition 2
        rounding = "; ".join(
            _rounding(h, helpers[h], "diverges") for h in diverging if h not in state
        )
        if not state:
            return f"{lead}; {base} is exact, so the kernels agree; {rounding}"
        return (
            f"{lead}; {base} is exact, so the kernels agree: a deterministic logic fault on "
            "the cache path (condition 2)" + f"; {rounding}" * bool(rounding)
        )
    return f"{lead}; run {base} too, to tell a kernel (condition 1) from a logic fault"


def cross_server(store: SessionStore) -> list[ServerPair]:
    """Every other server against the first one, per helper and per token."""
    servers = _servers(store)
    return [server_pair(store, servers[0], y) for y in servers[1:]]
