"""The three-way reading in words: one golden line per `ThreeWayKind`, from findings built here,
then what the line adds (dtypes, the floors) and the JSON entry; the readings' tests assert the
kinds."""

from __future__ import annotations

import pytest

from kltui.metrics.floors import read_floors
from kltui.readings.three_way import DtypePair, Leg, Ranking, ThreeWay, ThreeWayKind
from kltui.words.three_way import json_verdict, three_way_json, verdict_line

LEG = Leg("SGLang vs HF", 20, 160, 1.2e-7, 1e-4, 2e-3, 0.99, 3e-7, True, 1, 1, 0)
K3 = Ranking("mean_k3", 20, 1.9e-5, 31.4, "SGLang")
UKL = Ranking("union_kl_mean", 20, 3e-4, 12.0, "SGLang")


def tw(kind: ThreeWayKind, k3: Ranking = K3, ukl: Ranking = UKL, **kw) -> ThreeWay:
    closer = k3.closer if kind is ThreeWayKind.CLOSER else None
    return ThreeWay("hf:/m", [LEG], kind, closer, [k3, ukl], **kw)


@pytest.mark.parametrize(
    "reading, line",
    [
        (
            tw(ThreeWayKind.CLOSER),
            "SGLang is closer to the reference on per-sample mean k3 and on union KL: vLLM's is "
            "31.4x SGLang's (Hodges-Lehmann), paired signed-rank p 1.9e-05 over 20 samples",
        ),
        (
            tw(
                ThreeWayKind.CLOSER,
                Ranking("mean_k3", 20, 1.9e-5, 0.05, "vLLM"),
                Ranking("union_kl_mean", 20, 0.3, 1.0, None),
            ),
            "vLLM is closer to the reference on per-sample mean k3: SGLang's is 20x vLLM's "
            "(Hodges-Lehmann), paired signed-rank p 1.9e-05 over 20 samples",
        ),
        (
            tw(ThreeWayKind.TOO_FEW, Ranking("mean_k3", 8, 0.1, 2.0, None)),
            "inconclusive: 8 sample(s) compared on both engines; the paired test needs at least "
            "12 (--samples)",
        ),
        (
            tw(ThreeWayKind.ROUNDING, Ranking("mean_k3", 16, 1.0, 1.0, None, 16)),
            "inconclusive: both engines are within rounding of the reference (every per-sample "
            "mean k3 under 1e-09 on both, over 16 samples), so neither is closer beyond "
            "rounding; a run in the production dtype (bf16) or with longer contexts would show "
            "which one drifts first",
        ),
        (
            tw(ThreeWayKind.NOT_BEYOND_CHANCE, Ranking("mean_k3", 30, 0.41, 1.13, None)),
            "inconclusive: neither engine is closer to the reference beyond chance on per-sample "
            "mean k3 (vLLM/SGLang ratio 1.13, p 0.41 over 30 samples, needs < 0.00025); more "
            "samples or longer continuations would decide",
        ),
        (
            tw(ThreeWayKind.METRICS_DISAGREE, ukl=Ranking("union_kl_mean", 20, 3e-4, 0.1, "vLLM")),
            "inconclusive: SGLang is closer on per-sample mean k3 (p 1.9e-05) but vLLM on union "
            "KL (p 0.0003): the two metrics disagree",
        ),
        (
            ThreeWay("hf:/m", [LEG], ThreeWayKind.ONE_ENGINE),
            "SGLang vs HF: avg_kl_div 1.200e-07, top-1 agreement 99.00%; no second engine to "
            "rank (give --baseline vllm:URL too for the three-way table)",
        ),
    ],
)
def test_each_kind_in_one_line(reading, line):
    assert verdict_line(reading) == line


def test_the_line_says_the_dtypes_and_the_engines_own_noise_after_the_verdict():
    floors = {"reading": read_floors(1e-6, 0.0, 0.0).to_json(), "samples": [0], "of": 4}
    reading = tw(
        ThreeWayKind.TOO_FEW,
        Ranking("mean_k3", 8, 0.1, 2.0, None),
        dtypes=(DtypePair("SGLang", "bfloat16", "float32"),),
        floors=floors,
    )
    assert verdict_line(reading).endswith(
        "(--samples); across dtypes (SGLang bfloat16 vs reference float32): the distances "
        "include the dtype's rounding; the engines' own noise (cross_engine's floors): the "
        "engines differ by 1.000e-06 (avg k3) while each engine's floor is exactly 0 (1 of 4 "
        "sequences bit-identical in another batch and in the first scoring): none of the gap "
        "is either engine's own noise between those batches"
    )
    js = three_way_json(reading)
    assert js["verdict"] == "inconclusive" and js["across_dtypes"] is True
    assert js["line"] == verdict_line(reading) and js["rankings"][0]["n"] == 8
    assert three_way_json(tw(ThreeWayKind.CLOSER))["verdict"] == "SGLang"


@pytest.mark.parametrize(
    "kind, word",
    [
        (ThreeWayKind.CLOSER, "SGLang"),
        (ThreeWayKind.ONE_ENGINE, None),
        (ThreeWayKind.TOO_FEW, "inconclusive"),
        (ThreeWayKind.ROUNDING, "inconclusive"),
        (ThreeWayKind.NOT_BEYOND_CHANCE, "inconclusive"),
        (ThreeWayKind.METRICS_DISAGREE, "inconclusive"),
    ],
)
def test_the_json_verdict_of_each_kind(kind: ThreeWayKind, word: str | None):
    assert json_verdict(tw(kind)) == word
