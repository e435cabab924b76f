"""A cache path's misses beside the KV pool the server reported: when every hit request's
input, all warmed before the first hit, holds more tokens than the pool, the reading names the
two figures and what tests the path; never when either figure is missing or they fit."""

from kltui.readings.coverage import pool_misses
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import PoolNote
from kltui.session.events import HelperFinished, HelperStarted, RunStarted, SampleSkipped
from kltui.session.store import SessionStore
from kltui.words.diagnosis import said

S = "http://127.0.0.1:1"


def finished(helper: str, missed: int, samples: int, pool, asked) -> SessionStore:
    st = SessionStore()
    server = {"url": S, "engine": "sglang", "page_size": 1}
    st.apply(RunStarted("r", 0.0, {"max_new_tokens": 8}, [server], {"max_len": 30}, "0"))
    st.apply(HelperStarted(helper, S, samples, 1e-9, 1e-9))
    for i in range(missed):
        st.apply(SampleSkipped(helper, S, i, "prefill cache miss (cached_tokens=0)", 0, 100))
    summary = {
        "status": "fail", "passed": False, "samples": samples, "scored": samples - missed,
        "skipped": missed, "hits": samples - missed, "kv_pool_tokens": pool,
        "hit_input_tokens": asked,
    }  # fmt: skip
    st.apply(HelperFinished(helper, S, summary))
    return st


def test_inputs_above_the_pool_name_both_figures_and_what_fits():
    st = finished("prefill_cache_hit", 32, 32, 50_245, 59_889)
    short = pool_misses(st.helpers[f"prefill_cache_hit@{S}"])
    assert short is not None and short.kind == "kv-pool-short"
    assert (short.missed, short.samples, short.pool_tokens, short.input_tokens) == (
        32, 32, 50_245, 59_889,
    )  # fmt: skip
    assert short.fit == 26  # 50,245 // (59,889 / 32)
    (d,) = diagnose(st)
    assert PoolNote(short) in d.evidence, said(d).evidence  # both figures and what fits


def test_no_pool_reading_when_the_inputs_fit_or_a_figure_is_missing():
    cases = [
        (5, 32, 80_000, 59_889),  # they fit: the misses are something else
        (5, 32, None, 59_889),  # the server reports no pool
        (5, 32, 50_245, None),  # an older recording
        (0, 32, 50_245, 59_889),  # nothing missed
    ]
    for missed, samples, pool, asked in cases:
        st = finished("decode_cache_hit", missed, samples, pool, asked)
        assert pool_misses(st.helpers[f"decode_cache_hit@{S}"]) is None, (pool, asked)
        (d,) = diagnose(st)
        assert not [e for e in d.evidence if isinstance(e, PoolNote)], said(d).evidence
