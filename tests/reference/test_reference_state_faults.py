"""The planted faults on the stateful archs' saves (reference/faults.py): each visible exactly
where its docstring says, and gone with the knob that removes it."""

from __future__ import annotations

import pytest

from tests.reference.kit import RefClient
from tests.reference.stateful_kit import exact, multiturn, prompts, serve

MAMBA = ("--arch", "mamba")
TRACK_64 = ("--mamba-track-interval", "64")


def _client(pool, *flags: str) -> RefClient:
    return RefClient(serve(pool, *flags))


def _dirty(k3s: list[list[float]]) -> list[bool]:
    return [not exact(x) for x in k3s]


def test_batch_state_offset_shows_in_the_prefill_hit_of_the_later_requests(reference_servers):
    c = _client(reference_servers, *MAMBA, "--fault", "batch-state-offset")
    ps = prompts(c, [300, 200, 150])
    r = c.prefill_cache_hit(ps, 6)
    assert r.cached == [256, 192, 128]
    assert _dirty(r.k3) == [False, True, True]  # the first of the warm-up's batch is right
    assert all(exact(x) for x in c.match(ps, 6).k3)


def test_batch_state_offset_is_gone_one_request_at_a_time(reference_servers):
    c = _client(
        reference_servers, *MAMBA, "--fault", "batch-state-offset", "--max-running-requests", "1"
    )
    r = c.prefill_cache_hit(prompts(c, [300, 200, 150]), 6)
    assert r.cached == [256, 192, 128] and all(exact(x) for x in r.k3)


@pytest.mark.parametrize("graphs", [True, False])
def test_graph_stale_tail_needs_cuda_graphs_and_a_decode_save(reference_servers, graphs):
    flags = () if graphs else ("--disable-cuda-graph",)
    c = _client(reference_servers, *MAMBA, *TRACK_64, "--fault", "graph-stale-tail", *flags)
    ps = prompts(c, [100, 150])
    r = c.decode_cache_hit(ps, 30)
    # 100 + 30 crosses 64 * 2 = 128 while decoding: turn 2 restores that save; 150 + 30 does
    # not reach 192, so its turn 2 restores its prefill checkpoint (128)
    assert r.cached == [128, 128]
    assert _dirty(r.k3) == [graphs, False]
    assert all(exact(x) for x in c.prefill_cache_hit(ps, 30).k3)


def test_checkpoint_off_by_one_shows_in_every_checkpoint_hit(reference_servers):
    c = _client(reference_servers, *MAMBA, "--fault", "checkpoint-off-by-one")
    ps = prompts(c, [300, 200])
    assert all(_dirty(c.prefill_cache_hit(ps, 6).k3))
    assert all(_dirty(c.decode_cache_hit(ps, 6).k3))
    assert all(exact(x) for x in c.match(ps, 6).k3)


def test_swa_early_evict_shows_once_decoding_passes_the_window(reference_servers):
    c = _client(reference_servers, "--arch", "swa", "--sliding-window", "32")
    faulty = _client(
        reference_servers, "--arch", "swa", "--sliding-window", "32", "--fault", "swa-early-evict"
    )
    ps = prompts(c, [10, 40])
    short = faulty.match(ps, 20)  # 10 + 20 stays inside the window; 40 is past it at once
    assert _dirty(short.k3) == [False, True]
    # the first token comes from the prefill, the rest from decode steps past the window
    assert short.k3[1][0] == 0.0 and any(x > 0 for x in short.k3[1][1:])
    assert all(exact(x) for x in c.match(ps, 20).k3)


@pytest.mark.parametrize("flags", [MAMBA + TRACK_64, ("--page-size", "4")])
def test_decode_track_slot_only_shows_in_multi_turn_runs(reference_servers, flags):
    c = _client(reference_servers, *flags, "--fault", "decode-track-slot")
    ps = prompts(c, [101, 150])
    assert all(exact(x) for x in c.match(ps, 40).k3)
    assert all(exact(x) for x in c.prefill_cache_hit(ps, 40).k3)
    assert all(exact(x) for x in c.decode_cache_hit(ps, 40).k3)
    p = prompts(c, [70, 30, 30, 45, 25])
    rows = multiturn(c, p[0], [p[1][1:], p[2][1:]], [p[3][1:], p[4][1:]], 40)
    dirty = {(b, t) for b, t, _, mean in rows if mean != 0.0}
    # branch 1's turn 1 hit the shared prefix, so its turn 2 restores bad saves; every turn 3
    # restores the saves of a turn 2 that hit
    assert dirty == {(1, 1), (0, 2), (1, 2)}
