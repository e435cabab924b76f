"""The three-way table's finding in words (`readings/three_way.py` decides): which engine is
closer to the HF reference, or why it is inconclusive, then what the distances include (dtypes,
each engine's own noise), and the JSON `three_way` entry that carries it."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from kltui import fmt
from kltui.readings.paired import EVIDENCE_P, MIN_COMMON, STRAY_ULP_FLOOR
from kltui.readings.three_way import Ranking, ThreeWay, ThreeWayKind
from kltui.words.floors import verdict_line as floors_line


def _p(p: float | None) -> str:
    return "?" if p is None else f"{p:.2g}"


def _kind_line(kind: ThreeWayKind, k3: Ranking, ukl: Ranking) -> str:
    match kind:
        case ThreeWayKind.TOO_FEW:
            return (
                f"inconclusive: {k3.n} sample(s) compared on both engines; the paired test "
                f"needs at least {MIN_COMMON} (--samples)"
            )
        case ThreeWayKind.ROUNDING:
            return (
                f"inconclusive: both engines are within rounding of the reference (every "
                f"per-sample mean k3 under {STRAY_ULP_FLOOR:g} on both, over {k3.n} samples), "
                "so neither is closer beyond rounding; a run in the production dtype (bf16) or "
                "with longer contexts would show which one drifts first"
            )
        case ThreeWayKind.NOT_BEYOND_CHANCE:
            return (
                f"inconclusive: neither engine is closer to the reference beyond chance on "
                f"per-sample mean k3 (vLLM/SGLang ratio {k3.ratio:.3g}, p {_p(k3.p)} over "
                f"{k3.n} samples, needs < {EVIDENCE_P:g}); more samples or longer continuations "
                "would decide"
            )
        case ThreeWayKind.METRICS_DISAGREE:
            return (
                f"inconclusive: {k3.closer} is closer on per-sample mean k3 (p {_p(k3.p)}) but "
                f"{ukl.closer} on union KL (p {_p(ukl.p)}): the two metrics disagree"
            )
    far = "vLLM" if k3.closer == "SGLang" else "SGLang"
    ratio = k3.ratio if k3.closer == "SGLang" else 1 / (k3.ratio or 1.0)
    also = " and on union KL" if ukl.closer == k3.closer else ""
    return (
        f"{k3.closer} is closer to the reference on per-sample mean k3{also}: {far}'s is "
        f"{ratio:.3g}x {k3.closer}'s (Hodges-Lehmann), paired signed-rank p {_p(k3.p)} over "
        f"{k3.n} samples"
    )


def _across(tw: ThreeWay) -> str:
    """What the distances include: the dtypes' rounding, each engine's own noise."""
    text = ""
    if tw.dtypes:
        parts = ", ".join(f"{d.engine} {d.dtype} vs reference {d.reference}" for d in tw.dtypes)
        text = f"; across dtypes ({parts}): the distances include the dtype's rounding"
    if tw.floors is not None:
        text += f"; the engines' own noise (cross_engine's floors): {floors_line(tw.floors)}"
    return text


def verdict_line(tw: ThreeWay) -> str:
    """The verdict as one line ("SGLang is closer ..." or "inconclusive: ...")."""
    if tw.kind is ThreeWayKind.ONE_ENGINE:
        leg = tw.legs[0]
        return (
            f"{leg.name}: avg_kl_div {fmt.sci(leg.avg_kl_div)}, top-1 agreement "
            f"{fmt.pct(leg.top1_agreement)}; no second engine to rank (give --baseline vllm:URL "
            "too for the three-way table)" + _across(tw)
        )
    k3, ukl = tw.rankings
    return _kind_line(tw.kind, k3, ukl) + _across(tw)


def json_verdict(tw: ThreeWay) -> str | None:
    """The JSON's word: the closer engine, "inconclusive", or None with one engine."""
    if tw.kind is ThreeWayKind.ONE_ENGINE:
        return None
    return tw.closer if tw.kind is ThreeWayKind.CLOSER else "inconclusive"


def three_way_json(tw: ThreeWay) -> dict[str, Any]:
    """The JSON result's `three_way` entry (docs/JSON.md)."""
    return {
        "reference": tw.reference,
        "legs": [asdict(leg) for leg in tw.legs],
        "verdict": json_verdict(tw),
        "line": verdict_line(tw),
        "rankings": [asdict(r) for r in tw.rankings],
        "across_dtypes": tw.across_dtypes,
    }
