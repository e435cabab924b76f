"""The H200 --stress run of docs/FIELD_NOTES.md section 9, read back from its recordings (real
SGLang 0.5.17, 8B-shaped checkpoint, FA3 deterministic, graphs on, 16 x 256, level light):
tests/data/h200-stress, copied as the device call returned them."""

from __future__ import annotations

from pathlib import Path

from kltui.readings.stress import SkipKind, SqueezeSkip, StressVerdict, read, squeeze_skip
from kltui.session.fold import fold
from kltui.session.recording import read_recording

DATA = Path(__file__).parents[2] / "data" / "h200-stress"


def _stores():
    stores = []
    for name in ("stress.kltui.jsonl", "stress-2.kltui.jsonl"):
        fold(read_recording(str(DATA / name)), stores.append)
    return stores


def test_the_h200_run_is_clean_only_for_what_its_traffic_reached():
    quiet, loud = _stores()
    r = read(quiet, loud)
    assert r.verdict is StressVerdict.CLEAN
    assert [(h.helper, h.compared, h.identical) for h in r.helpers] == [
        ("match", 16, 16),
        ("prefill_cache_hit", 16, 16),
        ("decode_cache_hit", 16, 16),
    ]
    assert [h.load for h in r.helpers] == [42, 41, 65]
    # an 845617-token pool: the light squeeze skipped, nothing evicted or retracted
    (url,) = r.traffic
    assert r.not_exercised() == {url: ["eviction", "retraction"]}
    (cov,) = r.uncovered()
    assert cov.squeeze_skipped == SqueezeSkip(SkipKind.OVER_LEVEL, 826914, "light", 8192)


def test_the_stray_output_logprob_of_real_sglang_under_load_cost_no_sample():
    # under load (never quiet) SGLang answered scoring prefills with one output logprob and no
    # output token; kltui warned, scored the input logprobs, and lost no sample
    quiet, loud = _stores()
    stray = [p for p in loud.problems if "no output token" in p.message]
    assert [(p.helper, p.fatal) for p in stray] == [
        ("match", False),
        ("prefill_cache_hit", False),
        ("decode_cache_hit", False),
    ]
    assert not [p for p in quiet.problems if "no output token" in p.message]
    assert all(len(st.book.samples) == 16 for st in loud.helpers.values())


def test_a_skipped_squeeze_is_read_from_its_figures_where_recorded():
    # today's recordings hold the figures beside the words; the words are never parsed then
    note = {"pool": 845617, "target": 826914, "level": "light", "squeeze_max": 8192}
    assert squeeze_skip(note | {"skipped": "(words)"}) == SqueezeSkip(
        SkipKind.OVER_LEVEL, 826914, "light", 8192
    )
    # an older recording: the level's most was in its text alone
    old = {
        "pool": 845617,
        "target": 826914,
        "skipped": "826914 tokens needed, over the light level's 8192",
    }
    assert squeeze_skip(old) == SqueezeSkip(SkipKind.OVER_LEVEL, 826914, "light", 8192)
    assert squeeze_skip({"pool": 1, "skipped": "odd"}) == SqueezeSkip(
        SkipKind.RECORDED, recorded="odd"
    )
