"""A MoE model's routing line measures its top-1 flips (issue 57): in the drill-down's windows,
the positions where the prefill's own top-1 is not the token the greedy decode chose. Synthetic
cases for the count, and the real run it was built for: a tiny gpt-oss-shaped checkpoint (MoE 8
experts top-2, sliding window 128) served by real SGLang 0.5.17 on an H100 (bench/gpu_hybrid.sh,
2026-12-07), replayed from its recording; and a tiny Qwen3-Next-shaped one's multiturn run on
the same card, whose 27 turns hit as SGLang 0.5.23's Mamba asserts accept."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kltui.engines.geometry import Experts, Source, StateGeometry, StateKind
from kltui.readings.diagnosis import diagnose
from kltui.readings.findings import Finding
from kltui.readings.geometry_evidence import geometry_of_info, top1_flips
from kltui.readings.geometry_parts import Routing, TopFlips
from kltui.readings.multiturn import HitKind, read_multiturn
from kltui.session.events import ExtrasFetched, RunStarted
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore
from tests.unit.readings.test_geometry_evidence import PROMPTS, N, S, feed

DATA = Path(__file__).parents[2] / "data" / "real_hybrid"
MOE = StateGeometry(experts=Experts(8, 2, Source.MODEL_CONFIG), known=True)


def moe_store(temperature: float = 0.0) -> SessionStore:
    st = SessionStore()
    server = {"url": S, "engine": "sglang", "geometry": MOE.record()}
    config = {"max_new_tokens": N, "temperature": temperature}
    st.apply(RunStarted("r", 0.0, config, [server], {"max_len": 60}, "0"))
    feed(st, "match", PROMPTS, [0] * 16, {3: 5})
    return st


def window(sample: int, start: int, picks: list[int], tops: list[int]) -> ExtrasFetched:
    """A drill-down window: the decode chose `picks`, the prefill's top-1 was `tops`."""
    top = [[[t, -0.1], [t + 1, -2.5]] for t in tops]
    lp = np.full(len(picks), -0.5)
    return ExtrasFetched("match", S, sample, start, np.array(picks), lp, top)


def test_flips_counted_once_per_position_with_the_tail_among_them():
    st = moe_store()
    ids = np.arange(N)  # feed() decodes ids 0..N-1; sample 3 differs from position 5 on
    st.apply(window(3, 2, ids[2:9].tolist(), [2, 3, 4, 99, 6, 99, 8]))
    st.apply(window(3, 6, ids[6:10].tolist(), [6, 99, 8, 9]))  # overlaps: 6..8 once
    st.apply(window(0, 0, ids[0:3].tolist(), [0, 1, 2]))
    (match,) = [h for h in st.helpers.values() if h.helper == "match"]
    flips = top1_flips(match)
    # sample 3: positions 2..9 (8), flips at 5 and 7; sample 0: 0..2, none
    assert flips == TopFlips(samples=2, positions=11, flips=2, tail_positions=5, tail_flips=2)
    (d,) = diagnose(st)
    (routing,) = [e for e in d.evidence if isinstance(e, Routing)]
    assert routing.flips == flips


def test_no_drill_down_or_sampling_measures_no_flips():
    (d,) = diagnose(moe_store())
    (routing,) = [e for e in d.evidence if isinstance(e, Routing)]
    assert routing.flips is None  # nothing fetched: nothing said
    st = moe_store(temperature=1.0)
    st.apply(window(3, 2, [2, 3, 4], [2, 99, 4]))
    (d,) = diagnose(st)
    assert d.finding is Finding.SAMPLING
    (routing,) = [e for e in d.evidence if isinstance(e, Routing)]
    assert routing.flips is None  # a sampled token is not the decode's top-1


def test_real_gpt_oss_shape_on_sglang_0_5_17():
    store = fold(read_recording(str(DATA / "go_check.kltui.jsonl")))[-1]
    (d,) = diagnose(store)
    (routing,) = [e for e in d.evidence if isinstance(e, Routing)]
    assert (routing.experts, routing.top_k, routing.helper) == (8, 2, "match")
    assert routing.flips == TopFlips(3, 63, 6, 36, 5)
    assert routing.max_k3 > 20 and 0.3 < routing.level < 0.4  # nats on one token, 0.37 mean


def test_real_qwen3_next_multiturn_hits_as_sglangs_mamba_asserts():
    store = fold(read_recording(str(DATA / "q3n_multiturn.kltui.jsonl")))[-1]
    (st,) = [h for h in store.helpers.values() if h.helper == "multiturn"]
    server = store.identity(st.server)
    g = geometry_of_info(server)
    assert g.kind is StateKind.MAMBA and g.experts is not None and g.track_grid() == 256
    reading = read_multiturn(st, page_size=server.page_size, track_interval=g.track_grid())
    assert len(reading.rows) == 27
    assert {r.hit for r in reading.rows} == {HitKind.AS_ASSERTED}
