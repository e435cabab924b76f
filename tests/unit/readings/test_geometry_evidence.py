"""Evidence and coverage read against the state geometry (issue 57): remainders, what each hit
restored, where divergence starts against the window and the checkpoints, what decoding
crossed, a divergence past the window read as condition 2, MoE routing; and a dense run reads
exactly as before. Kinds and figures only (the words: tests/unit/words)."""

import numpy as np

from kltui.engines.geometry import (
    Experts,
    MambaState,
    MambaStrategy,
    SlidingWindow,
    Source,
    Sourced,
    StateGeometry,
)
from kltui.metrics.k3 import ScoreBook
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import EvidenceKind, SuspectKind
from kltui.readings.findings import Finding
from kltui.readings.geometry_evidence import boundary_of, restore_kind
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
    WindowSplit,
)
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleScored
from kltui.session.store import SessionStore

S = "http://127.0.0.1:1"
N = 16  # tokens generated per sample
WINDOW = 40
SWA = StateGeometry(window=SlidingWindow(Sourced(WINDOW, Source.MODEL_CONFIG), (0,), 2), known=True)
MAMBA = StateGeometry(
    page_size=Sourced(1, Source.SERVER_INFO),
    mamba=MambaState(
        MambaStrategy.EXTRA_BUFFER,
        Source.SERVER_INFO,
        Sourced(32, Source.SERVER_INFO),
        Sourced(16, Source.MODEL_CONFIG),
    ),
    known=True,
)
GEOMETRY_KINDS = {
    EvidenceKind.RESIDUES,
    EvidenceKind.RESTORED,
    EvidenceKind.HANDOFF,
    EvidenceKind.CROSSING,
    EvidenceKind.WINDOW_SPLIT,
    EvidenceKind.ROUTING,
}


def store_of(geometry: StateGeometry | None) -> SessionStore:
    st = SessionStore()
    server = {"url": S, "engine": "sglang", "enable_deterministic_inference": True}
    if geometry is not None:
        server["geometry"] = geometry.record()
    st.apply(RunStarted("r", 0.0, {"max_new_tokens": N}, [server], {"max_len": 60}, "0"))
    return st


def feed(st, helper, prompts, cached, first: dict[int, int]) -> None:
    """One finished helper: sample i has a prompts[i]-token input, reused cached[i] tokens, and
    differs by 0.5 from position first[i] on (exact where i is not in `first`)."""
    rng = np.random.default_rng(len(helper))
    st.apply(HelperStarted(helper, S, len(prompts), 1e-3, 1e-3))
    book = ScoreBook()
    for i, (plen, c) in enumerate(zip(prompts, cached, strict=True)):
        b = -1 - rng.random(N) * 4
        a = b.copy()
        if i in first:
            a[first[i] :] += 0.5
        ids = np.arange(N)
        book.add(i, ids, a, b, c, plen)
        st.apply(SampleScored(helper, S, i, ids, a, b, c, plen))
    summary = book.summary(n_samples=len(prompts), n_skipped=0, threshold=1e-3)
    summary["status"] = "pass" if summary["passed"] else "fail"
    st.apply(HelperFinished(helper, S, summary))


# 16 prompts: half decode past the 40-token window (prompt + 15 > 40), half stay within it
PROMPTS = [20, 22, 24, 18, 21, 23, 19, 25, 30, 32, 34, 36, 38, 45, 50, 28]


def past_window(prompts) -> dict[int, int]:
    """Each sample whose decode passes the window, from the first token past it."""
    return {
        i: (WINDOW - p + 1 if p <= WINDOW else 1)
        for i, p in enumerate(prompts)
        if p + N - 1 > WINDOW
    }


def window_run(geometry):
    st = store_of(geometry)
    bad = past_window(PROMPTS)
    feed(st, "match", PROMPTS, [0] * 16, bad)
    feed(st, "prefill_cache_hit", PROMPTS, [p - 1 for p in PROMPTS], bad)
    turn2 = [p + N + 1 for p in PROMPTS]
    feed(st, "decode_cache_hit", turn2, [p + N for p in PROMPTS], past_window(turn2))
    (d,) = diagnose(st)
    return d, bad


# 8 prompts whose handoff comes late in the 16 generated tokens (positions 12-15), 8 that stay
# within the 40-token window: where a difference starts says as much as which samples differ
LATE = [26, 27, 28, 29, 26, 27, 28, 29, 10, 12, 14, 16, 18, 20, 22, 24]


def test_a_match_that_differs_exactly_past_the_window_is_condition_2_on_the_window():
    st = store_of(SWA)
    bad = past_window(LATE)
    feed(st, "match", LATE, [0] * 16, bad)
    (d,) = diagnose(st)
    assert d.finding is Finding.WINDOW_STATE
    assert (d.condition, d.conditions, d.action) == (2, [2], None)
    split = next(e for e in d.evidence if isinstance(e, WindowSplit))
    assert (split.window, split.differing, split.within) == (WINDOW, tuple(sorted(bad)), 8)
    assert split.p_samples < 2.5e-4 and split.p_position < 2.5e-4
    assert split.p == max(split.p_samples, split.p_position)
    onset = next(e for e in d.evidence if isinstance(e, Handoff) and e.helper == "match")
    assert onset.counts == ((Boundary.WINDOW, 8),)
    assert [s.kind for s in d.suspects] == [SuspectKind.WINDOW_EVICTION]


def test_the_longest_samples_differing_from_early_handoffs_is_not_enough():
    """The samples past the window are the longest: noise whose chance grows with length lands
    there too (simulated: up to 0.9 % false condition 2 on the sample test alone). Handoffs at
    positions 1-13 of 16 leave where the differences start too weak to tell (p=0.019): a state
    bug on the window is not excluded, and nothing is named condition 2, the cache paths'
    differences on the same long samples included."""
    d, bad = window_run(SWA)
    split = next(e for e in d.evidence if isinstance(e, WindowSplit))
    assert split.p_samples < 2.5e-4 < split.p_position < 0.05
    assert d.finding is Finding.WINDOW_UNCLEAR and d.condition != 2


def test_a_difference_that_starts_before_its_handoff_is_not_the_window():
    st = store_of(SWA)
    bad = past_window(LATE)
    bad[0] = 2  # prompt 26: its handoff is at position 15
    feed(st, "match", LATE, [0] * 16, bad)
    (d,) = diagnose(st)
    assert not [e for e in d.evidence if isinstance(e, WindowSplit)]
    assert d.finding not in (Finding.WINDOW_STATE, Finding.WINDOW_UNCLEAR)


def test_the_same_run_on_a_dense_server_reads_as_before_with_no_geometry_line():
    d, _ = window_run(None)
    assert d.finding is not Finding.WINDOW_STATE and d.condition != 2
    assert not {e.kind for e in d.evidence} & GEOMETRY_KINDS
    assert d.basis.uncrossed == ()


def test_coverage_counts_the_samples_past_the_window_and_names_the_tokens_that_would():
    d, bad = window_run(SWA)
    cross = {e.helper: e for e in d.evidence if isinstance(e, Crossing)}
    assert cross["match"].crossed == len(bad) == 8 and cross["match"].n == 16
    # the shortest prompt (18) needs 40 - 18 + 2 generated tokens to pass the window
    assert cross["match"].need == WINDOW - 18 + 2
    assert cross["decode_cache_hit"].crossed == 16 and cross["decode_cache_hit"].need is None


def mamba_run(prompts, decode_bad: dict[int, int], interval_cached):
    st = store_of(MAMBA)
    feed(st, "match", prompts, [0] * len(prompts), {})
    feed(st, "prefill_cache_hit", prompts, [p // 16 * 16 for p in prompts], {})
    turn2 = [p + N + 1 for p in prompts]
    feed(st, "decode_cache_hit", turn2, interval_cached, decode_bad)
    (d,) = diagnose(st)
    return d


def test_a_decode_checkpoint_bug_shows_what_each_hit_restored_and_where_it_starts():
    prompts = [20, 22, 24, 18, 21, 23, 19, 25, 30, 40, 34, 36, 38, 45, 50, 28]
    # turn 1 decodes 16 tokens: a 32-token boundary lies in (p, p + 15] for p in 17..31
    crossed = [(p + N - 1) // 32 > p // 32 for p in prompts]
    cached = [
        (p + N - 1) // 32 * 32 if c else p // 16 * 16 for p, c in zip(prompts, crossed, strict=True)
    ]
    bad = {i: 0 for i, c in enumerate(crossed) if c}
    d = mamba_run(prompts, bad, cached)
    assert d.finding is Finding.STATE_BUG and d.headline.helpers == ("decode_cache_hit",)
    restored = next(e for e in d.evidence if isinstance(e, Restored))
    assert restored.divergent == ((RestoreKind.DECODE_TRACK, len(bad)),)
    assert restored.passing == ((RestoreKind.PREFILL_CHUNK, 16 - len(bad)),)
    onset = next(e for e in d.evidence if isinstance(e, Handoff))
    assert onset.counts == ((Boundary.FIRST, len(bad)),)
    residues = [e for e in d.evidence if isinstance(e, Residues)]
    assert [(r.modulus, r.step) for r in residues] == [(Modulus.CHUNK, 16), (Modulus.TRACK, 32)]
    cross = next(
        e for e in d.evidence if isinstance(e, Crossing) and e.helper == "decode_cache_hit"
    )
    assert (cross.boundary, cross.crossed, cross.n) == (Crossed.TRACK, len(bad), 16)


def test_a_run_whose_decode_never_crossed_the_track_interval_says_so_in_its_verdict():
    prompts = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 4, 5, 6, 7]  # + 15 stays below 32
    d = mamba_run(prompts, {}, [0] * 16)
    assert d.finding is Finding.EXACT and d.condition == 0
    uncrossed = {c.helper: c for c in d.basis.uncrossed}
    assert set(uncrossed) == {"match", "prefill_cache_hit", "decode_cache_hit"}
    assert uncrossed["match"].need == 32 - 4 + 1


def test_a_moe_model_reads_its_tail_beside_the_mean():
    moe = StateGeometry(experts=Experts(8, 2, Source.MODEL_CONFIG), known=True)
    st = store_of(moe)
    feed(st, "match", PROMPTS, [0] * 16, {3: 5})
    (d,) = diagnose(st)
    (routing,) = [e for e in d.evidence if isinstance(e, Routing)]
    assert (routing.experts, routing.top_k, routing.helper) == (8, 2, "match")
    assert routing.max_k3 > routing.level > 0


def test_boundaries_and_restores_by_their_positions():
    assert boundary_of(30, 11, 40, None) is Boundary.WINDOW  # context 30 + 11 = 41
    assert boundary_of(50, 1, 40, None) is Boundary.WINDOW  # past it already: first decode
    assert boundary_of(30, 0, 40, None) is Boundary.FIRST
    assert boundary_of(30, 3, None, 32) is Boundary.TRACK  # context 33: past 32
    assert boundary_of(30, 5, 40, 32) is Boundary.ELSEWHERE
    assert restore_kind(0, 30, 16, 32) is RestoreKind.NOTHING
    assert restore_kind(16, 30, 16, 32) is RestoreKind.PREFILL_CHUNK
    assert restore_kind(64, 50, 16, 32) is RestoreKind.DECODE_TRACK
    assert restore_kind(29, 30, 16, 32) is RestoreKind.OFF_GRID
