"""The typed parts one golden test each renders: one Headline per Finding, every step, suspect,
command and evidence kind (tests/unit/words/test_diagnosis_words.py holds their words)."""

# ruff: noqa: F405
from kltui.readings.coverage import NOT_RUN, PageMisses, PoolShort, Untested
from kltui.readings.coverage import NotTested as Why
from kltui.readings.diagnosis_parts import *  # noqa: F403
from kltui.readings.findings import Basis, Finding, PathBasis
from kltui.readings.geometry_parts import (
    Boundary,
    Crossed,
    Crossing,
    Handoff,
    Modulus,
    Residues,
    Restored,
    RestoreKind,
    Routing,
    TopFlips,
    WindowSplit,
)
from kltui.readings.imported import ImportEvidence, ImportFinding, ImportKind, ImportLine
from kltui.readings.limit import Limit
from kltui.readings.paired import Paired

S = "http://127.0.0.1:30000"
B = Basis(
    (PathBasis("match", 32, 32), PathBasis("decode_cache_hit", 30, 32)),
    {"prefill_cache_hit": NOT_RUN},
)
P = Paired(
    "decode_cache_hit",
    32,
    29,
    2,
    1,
    9.51,
    2.5e-07,
    4.9e-4,
    shift_p=7.7e-4,
    up=3,
    down=0,
    tail_p=0.0039,
    spread_p=0.02,
    excess=0.3,
)
H = Headline
HEADLINES = {
    Finding.IMPORTED: H(text="training-inference mismatch in 3 of 20"),
    Finding.PENDING: H(),
    Finding.NOTHING_TESTED: H(),
    Finding.SAMPLING: H(temperature=0.7),
    Finding.EXACT: H(
        others=("decode_cache_hit",),
        nonfinite=("match",),
        partial=True,
        fails=(("prefill_cache_hit", "too few cache hits"),),
    ),
    Finding.EXACT_WHERE_TESTED: H(helpers=("match",), match_tested=True),
    Finding.BASELINE_NOT_TESTED: H(helpers=("decode_cache_hit",), base="match", why=NOT_RUN),
    Finding.STATE_BUG: H(
        helpers=("prefill_cache_hit", "decode_cache_hit"), primary="prefill_cache_hit"
    ),
    Finding.STATE_UNCLEAR: H(helpers=("decode_cache_hit",), p=0.035),
    Finding.STRAY_ULPS: H(helpers=("decode_cache_hit",), level=3e-12),
    Finding.STATE_BUG_FIRST: H(helpers=("decode_cache_hit",), level=0.69, match_level=6e-13),
    Finding.BOTH: H(helpers=("prefill_cache_hit",), match_level=3.81e-4),
    Finding.BROAD_EXCESS: H(failing=("decode_cache_hit",), match_level=3.81e-4, paired=P),
    Finding.FEW_FAR_ABOVE: H(match_level=3.81e-4, paired=P),
    Finding.TOO_FEW_COMMON: H(helpers=("decode_cache_hit",), n=8, match_level=1e-5),
    Finding.MATCH_PATH_ONLY: H(others=("prefill_cache_hit", "decode_cache_hit"), match_level=1e-5),
    Finding.CACHE_NOT_TESTED: H(others=("prefill_cache_hit",), match_level=1e-5),
    Finding.DETERMINISTIC_SHAPE: H(
        helpers=("decode_cache_hit",), others=("prefill_cache_hit",), match_level=3.81e-4
    ),
    Finding.BATCH_VARIANCE: H(
        helpers=("decode_cache_hit",), excess=(P,), match_level=1e-5, failing=("match",)
    ),
    Finding.DIRECT_STATE: H(
        helpers=("decode_cache_hit",), samples=(5, 17, 26), level=4.9e-4, match_level=9.9e-13
    ),
    Finding.FAR_ABOVE: H(
        helpers=("decode_cache_hit",), samples=(5, 17, 26), n=32, match_level=1e-5
    ),
    Finding.NOT_EXCLUDED: H(
        helpers=("prefill_cache_hit", "decode_cache_hit"), match_level=1e-5, deterministic=True
    ),
    Finding.RESTORE_STATE: H(
        helpers=("prefill_cache_hit",),
        samples=(9, 10, 11, 13),
        n=4,
        cold=12,
        least=4,
        p=5e-5,
        primary="prefill_cache_hit",
    ),
    Finding.RESTORE_UNCLEAR: H(samples=(3, 4), n=2, cold=4, least=5, p=0.33),
    Finding.WINDOW_STATE: H(
        helpers=("decode_cache_hit",), samples=(2, 4, 5, 6), n=4, cold=4, least=64, p=7.8e-5
    ),
    Finding.WINDOW_UNCLEAR: H(samples=(5, 14), n=3, cold=13, least=64, p=0.0087),
}
CMD = Command(CommandKind.DUMPS, S)
STEPS = [
    Step(k)
    for k in (
        StepKind.NOTHING_TESTED,
        StepKind.SAMPLING,
        StepKind.EXACT_MISSED,
        StepKind.EXACT_WHERE_TESTED,
        StepKind.STATE_UNCLEAR,
        StepKind.CONDITION2,
        StepKind.RELAUNCH_DETERMINISTIC,
        StepKind.DETERMINISTIC_UNKNOWN,
    )
] + [
    Step(StepKind.BASELINE, helpers=("match", "prefill_cache_hit", "decode_cache_hit")),
    Step(StepKind.NOT_EXCLUDED, samples=128),
    Step(
        StepKind.BROAD_EXCESS, samples=128, ratio=9.51, then=Step(StepKind.RELAUNCH_DETERMINISTIC)
    ),
    Step(StepKind.FEW_FAR_ABOVE, samples=12),
    Step(StepKind.TOO_FEW, samples=32, then=Step(StepKind.DETERMINISTIC_UNKNOWN)),
    Step(
        StepKind.NOTHING_TO_FIX_UNCOVERED, level=1.2e-12, gate=1e-3, helpers=("prefill_cache_hit",)
    ),
    Step(StepKind.NOTHING_TO_FIX, level=1.2e-12, gate=1e-3, deterministic=True, command=CMD),
    Step(StepKind.DUMPS, command=CMD),
    Step(StepKind.RECORDED, text="fix the records named"),
]
SUSPECTS = [
    Suspect(SuspectKind.DETERMINISTIC_OFF),
    Suspect(SuspectKind.DECODE_VS_EXTEND, name="triton"),
    Suspect(SuspectKind.TP_ALL_REDUCE, figure=2),
    Suspect(SuspectKind.CHUNKED_PREFILL, figure=8192, longest=9000),
    Suspect(SuspectKind.CUDA_GRAPH),
    Suspect(SuspectKind.OUTSIDE_BATCH_INVARIANT),
    Suspect(SuspectKind.PATH, name="prefill_cache_hit"),
    Suspect(SuspectKind.PAGE_RESTORE, figure=16),
    Suspect(SuspectKind.TRACK_SAVE, figure=256),
    Suspect(SuspectKind.SSM_CHECKPOINT, figure=64),
    Suspect(SuspectKind.SSM_CHECKPOINT),
    Suspect(SuspectKind.WINDOW_EVICTION, figure=128),
]
COMMANDS = [
    CMD,
    Command(CommandKind.CROSS_CHECK, S, ("match", "decode_cache_hit")),
    Command(CommandKind.RERUN, S, samples=128),
    Command(CommandKind.RECORDED, S, text="kltui import x"),
]
ROWS = (SampleRow(5, 40, 32), SampleRow(17, 44, 40), SampleRow(26, None, None, recorded=False))
EVIDENCE = [
    Count("match", 8, 32, 1.2e-5, 3e-3, (4, 17)),
    Settings(
        (("enable_deterministic_inference", True), ("disable_cuda_graph", False), ("page_size", 16))
    ),
    Protocol("a logprob above 0"),
    NotTested("decode_cache_hit", Untested(Why.FEW_SCORED, 1, 8, need=4)),
    PageNote(PageMisses("prefill_cache_hit", 2, 16)),
    PageNote(PageMisses("decode_cache_hit", 3, 16, 8, (0, 32))),
    PoolNote(PoolShort("kv-pool-short", "prefill_cache_hit", 32, 32, 4096, 6135, 21)),
    Nonfinite("match", ((3, (1, 2)), (7, (0,)))),
    Stray("prefill_cache_hit"),
    OnePath("prefill_cache_hit", 8, 32, 100, 512, 32, (("decode_cache_hit", 32),), 7.9e-5),
    PairedLine(P),
    Noise(P),
    Affected("decode_cache_hit", ROWS, (Separator(Figure.CONTEXT, True, 200, 180),)),
    Concentrated("decode_cache_hit", 3, 32, ROWS[:2]),
    PageResidues("prefill_cache_hit", 16, (1, 3), (0, 5, 7)),
    Onset("decode_cache_hit", OnsetKind.RESTORED_WRONG, 3, 2, 3, 0, None, None, True),
    Onset("decode_cache_hit", OnsetKind.FIRST_ROUNDING, 3, 0, 3, 0, None, None, False),
    Onset("decode_cache_hit", OnsetKind.FIRST_MIXED, 4, 1, 4, 0, None, None, False),
    Onset("decode_cache_hit", OnsetKind.SOME_LATER, 4, 1, 2, 2, 40, 33, False),
    Onset("decode_cache_hit", OnsetKind.MID, 4, 0, 0, 4, 40, 33, False),
    LimitLine(Limit("decode_cache_hit", 128, 42)),
    LimitLine(Limit("decode_cache_hit", 12, None)),
    LimitLine(Limit("decode_cache_hit", 32, 8, factor=0.0)),
    LimitLine(Limit("decode_cache_hit", 4, None, factor=0.0)),
    KernelsStep(Step(StepKind.RELAUNCH_DETERMINISTIC)),
    Recorded("rollout: 3 records differ"),
    CachedDecode("match", 4, (9, 10, 11, 13), (9, 10, 11, 13), 12, 5.5e-4),
    CachedDecode("match", 6, (16, 17, 18), (16, 17, 18), 16, 1.2e-4, 2.4e-4),
    Residues("prefill_cache_hit", Modulus.CHUNK, 64, (8, 27), (21, 23, 29)),
    Residues("prefill_cache_hit", Modulus.TRACK, 256, (72, 91), (23, 72)),
    Restored(
        "decode_cache_hit",
        64,
        256,
        ((RestoreKind.DECODE_TRACK, 11), (RestoreKind.PREFILL_CHUNK, 1)),
        ((RestoreKind.NOTHING, 3), (RestoreKind.OFF_GRID, 1)),
    ),
    Handoff("match", 12, ((Boundary.WINDOW, 11), (Boundary.ELSEWHERE, 1)), 128, None),
    Handoff("decode_cache_hit", 4, ((Boundary.FIRST, 2), (Boundary.TRACK, 2)), None, 256),
    Crossing("decode_cache_hit", Crossed.TRACK, 256, 0, 16, 235),
    Crossing("match", Crossed.WINDOW, 64, 8, 16, 45),
    Crossing("match", Crossed.WINDOW, 64, 16, 16, None),
    WindowSplit("match", 64, (2, 4, 5, 6), (2, 4, 5, 6), 4, 0.014, 0.014, 0.0031),
    Routing(8, 2, "decode_cache_hit", 2.9e-1, 2.7e-3, 12),
    Routing(8, 2, "match", 2.28e1, 3.67e-1, 928, TopFlips(3, 63, 6, 36, 5)),
    ImportEvidence(
        ImportLine.COUNT,
        ImportFinding(ImportKind.MISMATCH, samples=6, bad=0, differ=3, tokens=48, differ_tokens=3),
    ),
]
