"""Quiet vs stressed in words: one golden line per `StressVerdict` of a helper (and per way it
gets there), the traffic during a phase, the verdict line with its scope, what the traffic did
not reach and the notes; the readings' tests assert the verdicts and figures."""

from __future__ import annotations

import pytest

from kltui.readings.compare import SampleDiff
from kltui.readings.paired import Paired
from kltui.readings.stress import (
    Activity,
    HelperUnderLoad,
    Idle,
    IdleKind,
    SkipKind,
    SqueezeSkip,
    StressReading,
    StressVerdict,
    Uncovered,
)
from kltui.words.stress import (
    activity_line,
    head,
    helper_json,
    helper_line,
    lines,
    stress_json,
    uncovered_line,
)

U = "http://127.0.0.1:30000"
A = Activity("match/decode", 1.0, 5, {"long": 5, "short": 0}, 0, 1, 2, False)
FIRST = SampleDiff(1, 2, 2, None, None, 1, 0.0, 0.5)
HEAD = "match: quiet vs stressed on "
TEST = (
    "equal within the 1e-09 floor in 0 (signed-rank p={}; beyond a x3 drift p={}; minority "
    "sign test p={}; spread p=1; evidence needs p<0.00025, the spread p<0.000125 with a spread "
    "beyond 0.6)"
)


def paired(n, hi, lo, ratio, p, shift_p, up=0, tail_p=1.0) -> Paired:
    return Paired("match", n, hi, lo, 0, ratio, p, 1e-3, shift_p, up, 0, tail_p)


@pytest.mark.parametrize(
    "h, verdict, line",
    [
        (
            HelperUnderLoad("match", U, 2, 1, True, FIRST, None, A, load=5),
            StressVerdict.STATE_BUG,
            HEAD + "2 samples: 1 differ on a deterministic server: a state bug under load at "
            "sample 1, first position 1 (decode side); during match/decode (1 s) the traffic "
            "sent 5 requests (5 long), 2 in flight when it began, 0 aborted, 1 errors",
        ),
        (
            HelperUnderLoad("match", U, 32, 0, False, paired=paired(32, 30, 2, 40, 1e-8, 1e-6)),
            StressVerdict.STATE_BUG,
            HEAD + "32 samples: worse under load beyond noise: higher under stress in 30, lower "
            "in 2, " + TEST.format("1e-08", "1e-06", "1"),
        ),
        (
            HelperUnderLoad("match", U, 2, 2, True, load=5),
            StressVerdict.IDENTICAL,
            HEAD + "2 samples: bit-identical in every sample",
        ),
        (
            HelperUnderLoad("match", U, 32, 0, False, paired=paired(32, 16, 16, 1, 0.5, 0.9)),
            StressVerdict.WITHIN_NOISE,
            HEAD
            + "32 samples: within noise: higher under stress in 16, lower in 16, "
            + TEST.format("0.5", "0.9", "1"),
        ),
        (
            HelperUnderLoad(
                "match", U, 32, 0, False, paired=paired(32, 20, 12, 1.5, 0.01, 0.5, 3, 0.004)
            ),
            StressVerdict.SUSPECT,
            HEAD
            + "32 samples: suspect, not evidence: higher under stress in 20, lower in 12, "
            + TEST.format("0.01", "0.5", "0.004"),
        ),
        (
            HelperUnderLoad("match", U, 0, 0, True),
            StressVerdict.INCONCLUSIVE,
            HEAD + "0 samples: no sample scored in both runs",
        ),
        (
            HelperUnderLoad("match", U, 4, 0, False, paired=paired(4, 2, 2, 1, 0.5, 0.9)),
            StressVerdict.INCONCLUSIVE,
            HEAD + "4 samples: inconclusive: fewer than 12 common samples (the paired test "
            "cannot reach p<0.00025); re-run with --samples 24",
        ),
        (
            HelperUnderLoad("match", U, 2, 2, True, load=0, idle=Idle(IdleKind.BOUND, "seconds")),
            StressVerdict.INCONCLUSIVE,
            HEAD + "2 samples: inconclusive: no background request ran while it measured (the "
            "traffic had reached its seconds bound), so its stressed run was a quiet one; "
            "re-run with --helpers match to measure it under load",
        ),
        (
            HelperUnderLoad(
                "match", U, 2, 2, True, load=0, idle=Idle(IdleKind.FAILED, last_error="HTTP 400")
            ),
            StressVerdict.INCONCLUSIVE,
            HEAD + "2 samples: inconclusive: no background request ran while it measured "
            "(every background request failed: HTTP 400), so its stressed run was a quiet one",
        ),
    ],
)
def test_each_helper_verdict_in_one_line(h, verdict, line):
    assert h.verdict == verdict
    assert helper_line(h) == line


def test_the_traffic_of_a_phase():
    squeezed = Activity("match/decode", 0.5, 3, {}, 1, 0, 0, False, 4096)
    assert activity_line(squeezed) == (
        "during match/decode (0.5 s) the traffic sent 3 requests (none), 0 in flight when it "
        "began, 1 aborted, 0 errors; its squeeze filled the pool with 4096 tokens of other ids "
        "just before the hits, so the radix cache evicted part of the helper's prefixes"
    )
    assert activity_line(Activity("match/flush", 2.0, 0, {}, 0, 0, 0, True)) == (
        "during match/flush the traffic was paused (a flush needs an idle server)"
    )


def test_the_reading_as_lines_and_json():
    counts = {"sent": 9, "by_kind": {"long": 9}, "elapsed_s": 3.0, "max_in_flight": 2,
              "completed": 9, "aborted": 0, "errors": 0, "evictions_observed": 0,
              "stopped": "seconds"}  # fmt: skip
    h = HelperUnderLoad("match", U, 2, 1, True, FIRST, None, A, load=5)
    r = StressReading("light", [h], {U: counts}, {U: {"retractions": 0.0}}, [("x", U)])
    assert r.verdict == StressVerdict.STATE_BUG
    assert lines(r) == [
        "stress (light): state bug under load",
        helper_line(h),
        f"{U}: light traffic sent 9 requests (9 long) in 3 s, at most 2 in flight, 9 "
        "completed, 0 aborted, 0 errors, 0 evictions observed; server counted 0 retractions, "
        "stopped by its seconds bound",
        uncovered_line(Uncovered(U, ("eviction", "retraction"))),
        f"x on {U} did not run quiet: not compared",
    ]
    js = stress_json(r)
    assert js["notes"] == [f"x on {U} did not run quiet: not compared"]
    assert helper_json(h)["during"] == activity_line(A) and js["helpers"] == [helper_json(h)]
    assert head(StressReading("light", [], {}, {})) == "stress (light): inconclusive"
    assert lines(StressReading("light"))[-1] == "the stressed run recorded no traffic"


def test_a_clean_verdict_names_what_it_did_not_reach():
    h = HelperUnderLoad("match", U, 2, 2, True, load=5)
    server = {"retractions": 0.0, "evicted_tokens": 0.0}
    r = StressReading("light", [h], {U: {"sent": 4}}, {U: server})
    assert head(r) == "stress (light): clean (eviction and retraction not exercised)"
    u = Uncovered(
        U, ("eviction", "retraction"), SqueezeSkip(SkipKind.OVER_LEVEL, 826914, "light", 8192)
    )
    assert uncovered_line(u) == (
        f"{U}: not exercised: eviction and retraction (the server counted none, and the traffic "
        "saw no shorter cache hit); the squeeze was skipped: 826914 tokens needed, over the "
        "light level's 8192; this reading covers concurrent batching and shared prefixes, not "
        "eviction or retraction; to reach them: a higher --stress level, or a server with a "
        "smaller KV pool (--max-total-tokens)"
    )
    assert uncovered_line(Uncovered(U, ("retraction",))).endswith(
        "(the server counted none); this reading covers concurrent batching and shared "
        "prefixes, not retraction; to reach it: a higher --stress level, or a server with a "
        "smaller KV pool (--max-total-tokens)"
    )
