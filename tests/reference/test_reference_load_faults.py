"""The load-triggered faults of issue 32, on the reference engine itself (real torch arithmetic,
no HTTP): each fires on its trigger and on nothing else, and a correct retraction is invisible."""

from __future__ import annotations

import pytest
import torch

from kltui.reference import CHECKPOINT_DIR
from kltui.reference.cache import RadixCache
from kltui.reference.engine import Engine, GenRequest, Sampling
from kltui.reference.faults import Fault, parse_fault
from kltui.reference.model import load_model

PROMPT = [0, *range(40, 90)]  # 51 ids, all in the tiny vocabulary


@pytest.fixture(scope="module")
def model():
    return load_model(CHECKPOINT_DIR)


def engine(model, fault: str = "none", **kw) -> Engine:
    f = Fault(fault)
    cache = RadixCache(1, kw.pop("max_tokens", 1 << 16), partial_evict=f.partial_evict)
    return Engine(model, cache, eos_ids=[1], deterministic=True, fault=f, decode_tail=str, **kw)


def gen(ids, new=8, lsl=-1, rid="r") -> GenRequest:
    return GenRequest(
        rid,
        list(ids),
        Sampling(temperature=0.0, max_new_tokens=new, ignore_eos=True),
        return_logprob=True,
        logprob_start_len=lsl,
    )


def decode_lps(eng: Engine, ids, new=8, batch=1) -> list[float]:
    """Output logprobs of one greedy decode, run beside `batch - 1` copies of itself."""
    acts = [eng.admit(gen(ids, new, rid=f"r{i}")) for i in range(batch)]
    lps = [p.new_logprobs[0] for p in eng.prefill(acts)[:1]]
    while not acts[0].finished:
        lps.append(eng.decode(acts)[0].new_logprobs[0])
    return lps


def prompt_lps(eng: Engine, ids, origin: int = 0) -> list:
    a = eng.admit(gen(ids, 0, lsl=0))
    a.origin = origin
    return eng.prefill([a])[0].prefill.input_logprobs


def test_fault_specs_are_checked():
    assert parse_fault("batch-switch:8") == ("batch-switch", 8)
    assert parse_fault("kv-corrupt-after") == ("kv-corrupt-after", 64)
    assert parse_fault("chunk-boundary") == ("chunk-boundary", None)
    for bad in ("batch-switch:0", "batch-switch:x", "chunk-boundary:3", "kv-rot"):
        with pytest.raises(ValueError):
            parse_fault(bad)


def test_kv_corrupt_after_starts_at_its_position(model):
    clean, faulty = (
        decode_lps(engine(model), PROMPT),
        decode_lps(engine(model, "kv-corrupt-after:54"), PROMPT),
    )
    # token j is decoded at position 50 + j and reads positions < 50 + j: 54 from j = 5 on
    assert clean[:5] == faulty[:5]
    assert clean[5] != faulty[5]


def test_batch_switch_only_above_its_batch(model):
    eng = engine(model, "batch-switch:2")
    alone = decode_lps(eng, PROMPT)
    assert decode_lps(eng, PROMPT, batch=2) == alone
    assert decode_lps(eng, PROMPT, batch=3) != alone


def test_chunk_boundary_only_past_the_budget(model):
    clean = prompt_lps(engine(model), PROMPT)
    assert prompt_lps(engine(model, "chunk-boundary"), PROMPT) == clean  # under the budget
    cut = prompt_lps(engine(model, "chunk-boundary", chunked_prefill_size=30), PROMPT)
    assert cut[:31] == clean[:31] and cut[31:] != clean[31:]


def test_stale_prompt_logprobs_needs_another_request(model):
    other = PROMPT[:20] + list(range(300, 360))
    clean = prompt_lps(engine(model), PROMPT)
    eng = engine(model, "stale-prompt-logprobs")
    prompt_lps(eng, other, origin=1)
    assert prompt_lps(eng, PROMPT, origin=1) == clean  # the same HTTP request: no stale hit
    eng.flush()
    prompt_lps(eng, other, origin=1)
    stale = prompt_lps(eng, PROMPT, origin=2)
    assert stale[:20] == clean[:20] and stale[20:] != clean[20:]
    eng.flush()  # a flush forgets it
    assert prompt_lps(eng, PROMPT, origin=3) == clean


def test_evict_under_pressure_restores_freed_kv():
    kv = torch.ones(1, 2, 40, 1, 2)
    flags = torch.zeros(40, dtype=torch.bool)
    for partial, restored in ((False, 0), (True, 40)):
        cache = RadixCache(1, 60, partial_evict=partial)
        cache.insert(list(range(40)), kv, flags)
        cache.insert(list(range(100, 140)), kv, flags)  # 80 > 60: the first one is evicted
        m = cache.match(list(range(40)), 40)
        assert m.length == restored
        if partial:
            assert bool((m.kv[:, :, :20] == 1).all()) and bool((m.kv[:, :, 20:] == 0).all())
        assert cache.evicted_tokens == (20 if partial else 40)


def test_retraction_is_invisible_on_a_correct_server(model):
    eng = engine(model)
    clean = decode_lps(eng, PROMPT)
    a = eng.admit(gen(PROMPT))
    lps = [eng.prefill([a])[0].new_logprobs[0], eng.decode([a])[0].new_logprobs[0]]
    eng.retract(a)
    assert eng.prefill([a]) and not a.resume  # KV recomputed, nothing emitted
    while not a.finished:
        lps.append(eng.decode([a])[0].new_logprobs[0])
    assert lps == clean
