"""The cross-server reading in words: one golden line per kind (`PairKind`, `SuspectKind`,
`MissingKind`), from typed findings built here; the readings' tests assert the kinds."""

from __future__ import annotations

import pytest

from kltui.readings.coverage import NotTested, Untested
from kltui.readings.cross_server import (
    Missing,
    MissingKind,
    PairKind,
    PairReading,
    Skipped,
    Suspect,
    SuspectKind,
)
from kltui.readings.identity import CheckBasis, ModelCheck, ModelState
from kltui.words.cross_server import missing_line, reading_line, suspect_line

PATHS = ModelCheck(ModelState.DIFFERENT, CheckBasis.MODEL_PATH, "/m/a", "/m/b")
UNSURE = ModelCheck(ModelState.UNVERIFIED, CheckBasis.ONE_VERSION, "7", name="M")
FEW = Untested(NotTested.FEW_SCORED, 1, 4, need=2)

P = "prefix restore"
ONE = Suspect("decode_cache_hit", SuspectKind.ONE_SERVER, (0.02, 1e-12), P, "A")
ROUND = Suspect("prefill_cache_hit", SuspectKind.ROUNDING, (2e-12, 3e-12), P)


def pair(kind: PairKind, **kw) -> PairReading:
    return PairReading(kind, "match", **({"changed": ("page_size",)} | kw))


@pytest.mark.parametrize(
    "reading, line",
    [
        (
            pair(PairKind.DIFFERENT_MODELS, models=PATHS, identical=False),
            "different models (model_path /m/a vs /m/b), compared because --allow-different-models "
            "was given: a difference says nothing about kernels or cache state",
        ),
        (
            pair(PairKind.NOTHING_COMPARED, uncompared=("match",)),
            "nothing compared: no helper has a sample scored on both servers (match)",
        ),
        (
            pair(PairKind.PARTLY_IDENTICAL, compared=("match",), uncompared=("decode_cache_hit",)),
            "bit-identical on match only (settings that differ: page_size); not compared: "
            "decode_cache_hit, so nothing is said about its path",
        ),
        (
            pair(PairKind.IDENTICAL_EXACT),
            "bit-identical across servers (settings that differ: page_size); every path exact",
        ),
        (
            pair(PairKind.IDENTICAL_SAME_SETTINGS, changed=()),
            "bit-identical across servers, but they report the same settings: run one with a "
            "setting changed (page size, tp, cuda graph) to separate logic from kernels",
        ),
        (
            pair(PairKind.IDENTICAL_KERNEL, diverging=("match",)),
            "bit-identical across servers although page_size differ, and match still diverge: "
            "the divergence is deterministic and does not depend on page_size (not a race, and "
            "not that setting); match diverges too, so a kernel on the decode path that both "
            "configurations run with the same shapes is the suspect (condition 1): find it with "
            "kltui dumps",
        ),
        (
            pair(PairKind.IDENTICAL_ROUNDING, diverging=("prefill_cache_hit",), suspects=(ROUND,)),
            "bit-identical across servers although page_size differ, and prefill_cache_hit still "
            "diverge: the divergence is deterministic and does not depend on page_size (not a "
            "race, and not that setting); match is exact, so the kernels agree; prefill_cache_hit "
            "diverges at rounding level (below the 1e-09 floor): not a state bug (avg_kl_div A "
            "2.000e-12, B 3.000e-12: rounding on that path's shapes)",
        ),
        (
            pair(PairKind.IDENTICAL_LOGIC_FAULT, diverging=("decode_cache_hit",)),
            "bit-identical across servers although page_size differ, and decode_cache_hit still "
            "diverge: the divergence is deterministic and does not depend on page_size (not a "
            "race, and not that setting); match is exact, so the kernels agree: a deterministic "
            "logic fault on the cache path (condition 2)",
        ),
        (
            pair(PairKind.IDENTICAL_NO_BASELINE, diverging=("decode_cache_hit",)),
            "bit-identical across servers although page_size differ, and decode_cache_hit still "
            "diverge: the divergence is deterministic and does not depend on page_size (not a "
            "race, and not that setting); run match too, to tell a kernel (condition 1) from a "
            "logic fault",
        ),
        (
            pair(PairKind.KERNELS, differing=("match", "decode_cache_hit")),
            "match differs between servers (settings that differ: page_size): the kernels give "
            "other numbers on the two configurations, so kernels or races (batch variance) are "
            "involved; decode_cache_hit differ too, which match's difference can explain",
        ),
        (
            pair(
                PairKind.CACHE_PATH,
                differing=("decode_cache_hit",),
                suspects=(ONE,),
                shapes=("decode_cache_hit",),
                uncompared=("prefill_cache_hit",),
            ),
            "match is bit-identical across servers, so their kernels agree; decode_cache_hit "
            "differs (avg_kl_div A 0.02, B 1e-12): a state bug on A's prefix restore (condition "
            "2); but decode_cache_hit restored a different number of cached tokens on the two "
            "servers and match is not exact, so a batch-variant kernel on the cache-hit path can "
            "explain it too; not compared: prefill_cache_hit",
        ),
        (
            pair(PairKind.BASELINE_NOT_COMPARED, differing=("decode_cache_hit",)),
            "decode_cache_hit differ between servers, but match was not compared, so kernels "
            "cannot be told from cache state: run match on both",
        ),
        (
            pair(PairKind.KERNELS, differing=("match",), unverified=UNSURE),
            "match differs between servers (settings that differ: page_size): the kernels give "
            "other numbers on the two configurations, so kernels or races (batch variance) are "
            "involved; same model name M, weights not verified: weight_version 7 on one server "
            "only: this reading holds only if they are the same",
        ),
    ],
)
def test_each_pair_kind_in_words(reading, line):
    assert reading_line(reading) == line


@pytest.mark.parametrize(
    "suspect, line",
    [
        (
            ROUND,
            "prefill_cache_hit differs at rounding level (below the 1e-09 floor): not a state bug "
            "(avg_kl_div A 2.000e-12, B 3.000e-12: rounding on that path's shapes)",
        ),
        (
            Suspect("prefill_cache_hit", SuspectKind.BOTH_DIVERGE, (0.206, 0.211), P),
            "prefill_cache_hit differs between the servers and diverges on both (avg_kl_div A "
            "0.206, B 0.211): whatever separates the servers changes what that path computes on "
            "both rather than confining it to one; each server's own diagnosis says whether its "
            "prefix restore holds a state bug",
        ),
        (ONE, "decode_cache_hit differs (avg_kl_div A 0.02, B 1e-12): a state bug on A's "
              "prefix restore (condition 2)"),
        (
            Suspect("decode_cache_hit", SuspectKind.EITHER, (None, None), P),
            "decode_cache_hit differs: a state bug on the prefix restore of one server "
            "(condition 2)",
        ),
    ],
)  # fmt: skip
def test_each_suspect_kind_in_words(suspect, line):
    assert suspect_line(suspect) == line


H = "match"
MANY = Skipped(3, 4, (("prefill cache miss", 2), ("aborted", 1)))


@pytest.mark.parametrize(
    "missing, line",
    [
        (Missing(MissingKind.ERRORED_BEFORE, H, "B"), "B errored before match"),
        (Missing(MissingKind.NOT_RUN_YET, H, "B"), "match has not run on B yet"),
        (Missing(MissingKind.DID_NOT_RUN, H, "B"), "match did not run on B"),
        (Missing(MissingKind.ERRORED_IN, H, "A", "decode"), "A errored in match (phase decode)"),
        (
            Missing(MissingKind.SKIPPED, H, "B", skipped=Skipped(4, 4, (("miss", 4),), 0, "c=0")),
            "no scored samples on B (every sample skipped: miss (sample 0: c=0))",
        ),
        (
            Missing(MissingKind.SKIPPED, H, "B", skipped=MANY),
            "no scored samples on B (3 of 4 samples skipped: prefill cache miss x2, aborted x1)",
        ),
        (
            Missing(MissingKind.SAID, H, "B", reason="match is vacuous: radix cache off"),
            "no scored samples on B (vacuous: radix cache off)",
        ),
        (Missing(MissingKind.STILL_RUNNING, H, "B"), "match is still running on B"),
        (Missing(MissingKind.DID_NOT_FINISH, H, "B"), "match did not finish on B"),
        (Missing(MissingKind.NO_SCORED, H, "B"), "no scored samples on B"),
        (
            Missing(MissingKind.NOT_TESTED, H, "B", untested=FEW),
            "not tested on B (only 1 of 4 samples scored (at least 2 needed to count as a test "
            "of its path))",
        ),
        (Missing(MissingKind.NO_COMMON, H), "no sample scored on both servers"),
    ],
)
def test_each_missing_kind_in_words(missing, line):
    assert missing_line(missing) == line
