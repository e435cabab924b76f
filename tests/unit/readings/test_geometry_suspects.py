"""Suspects named from the server's state geometry (issue 57): a Mamba server's decode state bug
points at the track save and the conv/SSM checkpoint, a sliding-window server's at the window's
eviction, a dense server's at neither. Kinds and figures only (the words: tests/unit/words)."""

from kltui.engines.geometry import (
    MambaState,
    MambaStrategy,
    SlidingWindow,
    Source,
    Sourced,
    StateGeometry,
)
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import SuspectKind
from kltui.readings.findings import Finding
from tests.unit.readings.test_restore_split import feed, store_of

MAMBA = StateGeometry(
    mamba=MambaState(
        MambaStrategy.EXTRA_BUFFER,
        Source.SERVER_INFO,
        Sourced(256, Source.SERVER_INFO),
        Sourced(64, Source.DERIVED),
    ),
    known=True,
)
SWA = StateGeometry(window=SlidingWindow(Sourced(128, Source.MODEL_CONFIG), (0, 2), 4), known=True)


def suspects_of(geometry: StateGeometry | None, helper: str) -> list:
    info = {"enable_deterministic_inference": True}
    if geometry is not None:
        info["geometry"] = geometry.record()
    st = store_of(**info)
    feed(st, "match", [0] * 16, set())
    feed(st, helper, [20] * 16, set(range(16)))
    (d,) = diagnose(st)
    assert d.finding is Finding.STATE_BUG
    return [(s.kind, s.figure) for s in d.suspects]


def test_a_mamba_decode_state_bug_names_the_track_save_and_the_checkpoint():
    assert suspects_of(MAMBA, "decode_cache_hit") == [
        (SuspectKind.PATH, None),
        (SuspectKind.TRACK_SAVE, 256),
        (SuspectKind.SSM_CHECKPOINT, 64),
    ]


def test_a_mamba_prefix_state_bug_names_the_checkpoint_not_the_track_save():
    assert suspects_of(MAMBA, "prefill_cache_hit") == [
        (SuspectKind.PATH, None),
        (SuspectKind.SSM_CHECKPOINT, 64),
    ]


def test_a_sliding_window_state_bug_names_the_eviction():
    assert suspects_of(SWA, "decode_cache_hit") == [
        (SuspectKind.PATH, None),
        (SuspectKind.WINDOW_EVICTION, 128),
    ]


def test_a_dense_server_names_the_path_only():
    assert suspects_of(None, "decode_cache_hit") == [(SuspectKind.PATH, None)]
