"""The decode-track-slot fault on the reference engine itself (real torch arithmetic, no HTTP):
it fires on a conversation's third turn whose hit ends off the track interval, and on nothing a
single-turn helper does."""

from __future__ import annotations

import pytest
import torch

from kltui.reference import CHECKPOINT_DIR
from kltui.reference.cache import RadixCache
from kltui.reference.engine import Engine, GenRequest, Sampling
from kltui.reference.fault_track_slot import decode_runs, fires
from kltui.reference.faults import Fault, parse_fault
from kltui.reference.model import load_model

PROMPT = [0, *range(40, 90)]  # 51 ids
SUFFIX_1, SUFFIX_2 = list(range(100, 108)), list(range(120, 125))


@pytest.fixture(scope="module")
def model():
    return load_model(CHECKPOINT_DIR)


def engine(model, fault: str = "none", page: int = 4) -> Engine:
    f = Fault(fault)
    return Engine(
        model, RadixCache(page), eos_ids=[1], deterministic=True, fault=f, decode_tail=str
    )


def turn(eng: Engine, ids: list[int], new: int = 8) -> tuple[list[int], list[float], int]:
    """One greedy generate: its output ids, output logprobs and cached_tokens."""
    req = GenRequest("r", list(ids), Sampling(0.0, new, True), return_logprob=True)
    a = eng.admit(req)
    first = eng.prefill([a])[0]
    lps = list(first.new_logprobs)
    while not a.finished:
        lps += eng.decode([a])[0].new_logprobs
    assert first.prefill is not None
    return a.output_ids, lps, first.prefill.cached_tokens


def conversation(eng: Engine) -> list[tuple[list[float], int]]:
    """Three turns of one conversation: (output logprobs, cached_tokens) per turn."""
    out, ids = [], list(PROMPT)
    for suffix in ([], SUFFIX_1, SUFFIX_2):
        ids = ids + suffix
        got, lps, cached = turn(eng, ids)
        out.append((lps, cached))
        ids = ids + got
    return out


def test_the_spec_takes_a_track_interval():
    assert parse_fault("decode-track-slot") == ("decode-track-slot", 16)
    assert parse_fault("decode-track-slot:8") == ("decode-track-slot", 8)


def test_runs_of_decode_written_kv():
    flags = torch.tensor([0, 1, 1, 0, 0, 1, 0], dtype=torch.bool)
    assert decode_runs(flags) == 2
    assert not fires(1, 16, 7, flags)  # page size 1
    assert fires(4, 16, 7, flags) and not fires(4, 7, 7, flags)  # on the track boundary
    assert not fires(4, 16, 3, flags)  # one decode run inside the hit


def test_the_third_turn_diverges_from_its_second_token(model):
    clean, faulty = conversation(engine(model)), conversation(engine(model, "decode-track-slot"))
    assert [c for _, c in clean] == [c for _, c in faulty] == [0, 56, 72]  # 72 % 16 == 8
    assert clean[0] == faulty[0] and clean[1] == faulty[1]
    lps, bad = clean[2][0], faulty[2][0]
    # position 0 is the prefill's; position 1 the step that saved in the wrong slot, which
    # attended the right KV; from position 2 on, every step reads the wrong slots
    assert lps[:2] == bad[:2]
    assert all(a != b for a, b in zip(lps[2:], bad[2:], strict=True))


def test_a_hit_on_the_track_boundary_stays_clean(model):
    # 72 is a multiple of 8: the same conversation never fires with T = 8
    clean, faulty = conversation(engine(model)), conversation(engine(model, "decode-track-slot:8"))
    assert clean == faulty


def test_page_size_one_stays_clean(model):
    assert conversation(engine(model, page=1)) == conversation(
        engine(model, "decode-track-slot", page=1)
    )
