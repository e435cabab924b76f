"""Which engine is closer to the model as written: SGLang vs the HF reference, vLLM vs the HF
reference, and SGLang vs vLLM, all three on the same token ids (one `hf_reference` run), read
from a session's store, so a replay reads the same as the live run.

The finding is a `ThreeWayKind` with the figures it rests on (words/three_way.py says it). The
verdict is the diagnosis's paired per-sample test (`readings/paired.py`): per sample, the
log ratio of SGLang's and vLLM's mean k3 against the reference (floored at the 1e-9 stray-ulp
level), a Wilcoxon signed-rank test each way (two-sided: the smaller one-sided chance, doubled)
and its Hodges-Lehmann ratio. An engine is named closer only when that chance is below the
diagnosis's EVIDENCE_P over at least MIN_COMMON common samples and the union-KL test does not
point the other way beyond chance; anything else is "inconclusive", with what would decide it.
A comparison across dtypes (an engine's reported dtype differs from the reference's) says so in
its line: its distances then include the dtype's rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from kltui.readings.floors import ENGINE_KEYS, floors_of
from kltui.readings.paired import (
    EVIDENCE_P,
    MIN_COMMON,
    STRAY_ULP_FLOOR,
    hodges_lehmann,
    signed_rank_p,
)
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore

HELPER = "hf_reference"
CROSS = "cross_engine"
UNION_FLOOR = 1e-12  # union KL is exact to float32 rounding of the logprobs, not 1e-9


@dataclass(frozen=True)
class Leg:
    """One pair of the table, on the same ids as the others."""

    name: str  # "SGLang vs HF", "vLLM vs HF", "SGLang vs vLLM"
    samples: int
    positions: int
    avg_kl_div: float | None
    mean_abs_delta: float | None
    max_abs_delta: float | None
    top1_agreement: float | None
    union_kl_mean: float | None
    union_exact: bool | None
    flips: int | None
    near_tie_flips: int | None  # judged by the reference's margin (None for SGLang vs vLLM)
    wide_flips: int | None
    across_dtypes: dict | None = None


@dataclass(frozen=True)
class Ranking:
    """The paired test of SGLang's and vLLM's distances to the reference on one metric."""

    metric: str
    n: int
    p: float | None  # two-sided
    ratio: float | None  # vLLM's distance / SGLang's (HL): above 1, SGLang is closer
    closer: str | None  # "SGLang" | "vLLM" | None
    at_floor: int = 0  # samples where both distances are at the floor (rounding level)


class ThreeWayKind(StrEnum):
    """What the table says of the two engines' distances to the reference."""

    CLOSER = "closer"  # one engine closer beyond chance (and union KL does not disagree)
    ONE_ENGINE = "one engine"  # no second engine to rank
    TOO_FEW = "too few"  # fewer than MIN_COMMON samples compared on both engines
    ROUNDING = "rounding"  # both within rounding of the reference on every sample
    NOT_BEYOND_CHANCE = "not beyond chance"  # neither engine closer beyond chance
    METRICS_DISAGREE = "metrics disagree"  # mean k3 names one engine, union KL the other


@dataclass(frozen=True)
class DtypePair:
    """An engine compared with the reference across dtypes."""

    engine: str  # "SGLang" | "vLLM"
    dtype: Any  # the engine's, as reported
    reference: Any  # the reference's


@dataclass(frozen=True)
class ThreeWay:
    """The table and its finding: the kind, the engine named closer (`closer`), the paired
    tests (`rankings`: per-sample mean k3, then union KL), the comparisons across dtypes and
    cross_engine's floors in the same run (words/three_way.py says them)."""

    reference: str | None
    legs: list[Leg]
    kind: ThreeWayKind
    closer: str | None = None  # "SGLang" | "vLLM" with CLOSER
    rankings: list[Ranking] = field(default_factory=list)
    dtypes: tuple[DtypePair, ...] = ()
    floors: dict | None = None  # cross_engine's floors entry (words/floors.py reads it)

    @property
    def across_dtypes(self) -> bool:
        """The line carries a note after the verdict: dtypes differ or floors were measured
        (the JSON's `across_dtypes`, as it always was)."""
        return bool(self.dtypes) or self.floors is not None


def _rows(fig: Any) -> dict[int, dict]:
    rows = fig.get("reference_per_sample") if hasattr(fig, "get") else None
    if not isinstance(rows, list):
        return {}
    return {r["index"]: r for r in rows if isinstance(r, dict) and isinstance(r.get("index"), int)}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _leg(name: str, fig: Any, avg: float | None, scored: int) -> Leg:
    rf = fig.get("reference_flips")
    rf = rf if isinstance(rf, dict) else {}
    dt = fig.get("across_dtypes")
    return Leg(
        name=name,
        samples=scored,
        positions=_int(fig.get("positions")) or 0,
        avg_kl_div=avg,
        mean_abs_delta=_num(fig.get("mean_abs_delta")),
        max_abs_delta=_num(fig.get("max_abs_delta")),
        top1_agreement=_num(fig.get("top1_agreement")),
        union_kl_mean=_num(fig.get("union_kl_mean")),
        union_exact=fig.get("union_exact") if isinstance(fig.get("union_exact"), bool) else None,
        flips=_int(rf.get("flips")),
        near_tie_flips=_int(rf.get("near_tie")),
        wide_flips=_int(rf.get("wide")),
        across_dtypes=dt if isinstance(dt, dict) else None,
    )


def _pair_leg(pair: dict) -> Leg:
    fm = pair.get("flip_margins")
    fm = fm if isinstance(fm, dict) else {}
    rows = pair.get("per_sample")
    means = [_num(r.get("mean_k3")) for r in rows or [] if isinstance(r, dict)]
    vals = [m for m in means if m is not None]
    cov = _num(pair.get("union_coverage"))
    return Leg(
        name="SGLang vs vLLM",
        samples=len(vals),
        positions=_int(pair.get("positions")) or 0,
        avg_kl_div=float(np.mean(vals)) if vals else None,
        mean_abs_delta=_num(pair.get("mean_abs_delta")),
        max_abs_delta=_num(pair.get("max_abs_delta")),
        top1_agreement=_num(pair.get("top1_agreement")),
        union_kl_mean=_num(pair.get("union_kl_mean")),
        union_exact=None if cov is None else cov >= 1.0,
        flips=_int(fm.get("flips")),
        near_tie_flips=None,
        wide_flips=None,
    )


def rank(a: dict[int, dict], b: dict[int, dict], key: str, floor: float) -> Ranking:
    """The paired test of per-sample `key` (a distance to the reference) of SGLang (`a`) and
    vLLM (`b`) on their common samples."""
    common = sorted(set(a) & set(b))
    pairs = [(_num(a[i].get(key)), _num(b[i].get(key))) for i in common]
    ok = [(x, y) for x, y in pairs if x is not None and y is not None]
    ok = [(x, y) for x, y in ok if math.isfinite(x) and math.isfinite(y)]
    n = len(ok)
    if n == 0:
        return Ranking(key, 0, None, None, None)
    x = np.maximum(np.array([p[0] for p in ok]), floor)
    y = np.maximum(np.array([p[1] for p in ok]), floor)
    at_floor = int(((x == floor) & (y == floor)).sum())
    r = np.log(y) - np.log(x)  # > 0: vLLM farther from the reference than SGLang
    p_sg, p_vl = signed_rank_p(r), signed_rank_p(-r)
    p = min(1.0, 2 * min(p_sg, p_vl))
    ratio = float(np.exp(hodges_lehmann(r)))
    closer = None
    if n >= MIN_COMMON and p < EVIDENCE_P:
        closer = "SGLang" if p_sg < p_vl else "vLLM"
    return Ranking(key, n, p, ratio, closer, at_floor)


def _dtypes(legs: list[Leg]) -> tuple[DtypePair, ...]:
    return tuple(
        DtypePair(
            leg.name.split(" vs ")[0],
            leg.across_dtypes.get("engine"),
            leg.across_dtypes.get("reference"),
        )
        for leg in legs
        if leg.across_dtypes
    )


def three_way(store: SessionStore) -> ThreeWay | None:
    """The reading of a run with an hf: reference (None without one)."""
    views: dict[str, HelperView] = {}
    for st in store.helpers.values():
        if st.helper != HELPER or st.summary is None:
            continue
        v = HelperView.of(st)
        engine = v.figures.get("engine")
        if engine in ("SGLang", "vLLM") and engine not in views:
            views[str(engine)] = v
    if not views:
        return None
    legs = [
        _leg(f"{e} vs HF", views[e].figures, views[e].summary.avg_kl_div, views[e].scored)
        for e in ("SGLang", "vLLM")
        if e in views
    ]
    ref = next(iter(views.values())).figures.get("reference")
    pair = views["vLLM"].figures.get("engines_pair") if "vLLM" in views else None
    if isinstance(pair, dict):
        legs.append(_pair_leg(pair))
    dtypes = _dtypes(legs)
    floors = _floors(store)
    if floors is not None:
        legs += _floor_legs(floors)
    if len(views) < 2:
        return ThreeWay(ref, legs, ThreeWayKind.ONE_ENGINE, None, [], dtypes, floors)
    a, b = _rows(views["SGLang"].figures), _rows(views["vLLM"].figures)
    k3 = rank(a, b, "mean_k3", STRAY_ULP_FLOOR)
    ukl = rank(a, b, "union_kl_mean", UNION_FLOOR)
    kind = _kind(k3, ukl)
    closer = k3.closer if kind is ThreeWayKind.CLOSER else None
    return ThreeWay(ref, legs, kind, closer, [k3, ukl], dtypes, floors)


def _floors(store: SessionStore) -> dict | None:
    """cross_engine's measured floors in the same run (None: not run, or no floors)."""
    for st in store.helpers.values():
        if st.helper == CROSS and st.summary is not None:
            fl = floors_of(HelperView.of(st).figures)
            if fl is not None and not fl.get("error") and fl.get("sglang") is not None:
                return fl
    return None


def _floor_legs(floors: dict) -> list[Leg]:
    """Each engine against itself in another batch, as legs of the same table."""
    legs = []
    for key, name in zip(ENGINE_KEYS, ("SGLang", "vLLM"), strict=True):
        f = floors.get(key)
        if not isinstance(f, dict):
            continue
        got = f.get("flip_margins")
        fm: dict = got if isinstance(got, dict) else {}
        legs.append(
            Leg(
                name=f"{name} vs itself",
                samples=len(f.get("samples") or []),
                positions=_int(f.get("positions")) or 0,
                avg_kl_div=_num(f.get("avg_k3")),
                mean_abs_delta=_num(f.get("mean_abs_delta")),
                max_abs_delta=_num(f.get("max_abs_delta")),
                top1_agreement=_num(f.get("top1_agreement")),
                union_kl_mean=_num(f.get("union_kl_mean")),
                union_exact=None,
                flips=_int(fm.get("flips")),
                near_tie_flips=_int(fm.get("within_line")),
                wide_flips=_int(fm.get("across_line")),
            )
        )
    return legs


def _kind(k3: Ranking, ukl: Ranking) -> ThreeWayKind:
    if k3.n < MIN_COMMON:
        return ThreeWayKind.TOO_FEW
    if k3.closer is None and k3.at_floor == k3.n:
        return ThreeWayKind.ROUNDING
    if k3.closer is None:
        return ThreeWayKind.NOT_BEYOND_CHANCE
    if ukl.closer is not None and ukl.closer != k3.closer:
        return ThreeWayKind.METRICS_DISAGREE
    return ThreeWayKind.CLOSER
