"""run/merge.bounded_merge: every event of every stream, at most `limit` streams at once, and a
stream that raises stops the merge."""

from __future__ import annotations

import asyncio

import pytest

from kltui.run.merge import bounded_merge


def streams(n: int, events: int, running: list[int], peak: list[int]):
    def make(i: int):
        async def gen():
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            try:
                for k in range(events):
                    await asyncio.sleep(0.001 * (1 + (i + k) % 3))
                    yield (i, k)
            finally:
                running[0] -= 1

        return gen

    return [make(i) for i in range(n)]


@pytest.mark.parametrize("limit", [1, 2, 4])
async def test_every_event_arrives_and_at_most_limit_streams_run(limit):
    running, peak = [0], [0]
    got = [ev async for ev in bounded_merge(streams(6, 5, running, peak), limit)]
    assert sorted(got) == [(i, k) for i in range(6) for k in range(5)]
    for i in range(6):  # each stream's own order is kept
        assert [k for j, k in got if j == i] == list(range(5))
    assert peak[0] == limit and running[0] == 0


async def test_limit_one_runs_the_streams_one_after_the_other():
    running, peak = [0], [0]
    got = [ev async for ev in bounded_merge(streams(3, 2, running, peak), 1)]
    assert got == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


async def test_a_stream_that_raises_stops_the_merge_and_cancels_the_rest():
    cancelled = []

    async def slow():
        try:
            yield 1
            await asyncio.sleep(30)
            yield 2
        finally:
            cancelled.append(True)

    async def bad():
        yield 0
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        async for _ in bounded_merge([slow, bad], 2):
            pass
    assert cancelled == [True]


async def test_guarded_turns_a_broken_server_into_a_problem_and_the_others_finish():
    from kltui.errors import UsageError
    from kltui.run.merge import guarded
    from kltui.session.events import PhaseChanged, Problem

    async def server(name: str, n: int, fail: BaseException | None = None):
        for i in range(n):
            await asyncio.sleep(0.001)
            yield PhaseChanged("match", name, f"p{i}")
        if fail is not None:
            raise fail

    makers = [
        lambda: guarded("a", server("a", 2, RuntimeError("boom"))),
        lambda: guarded("b", server("b", 4)),
    ]
    out = [ev async for ev in bounded_merge(makers, 2)]
    (p,) = [e for e in out if isinstance(e, Problem)]
    assert p.source == "a" and p.fatal and "RuntimeError: boom" in p.message
    assert [e.phase for e in out if getattr(e, "server", None) == "b"] == [
        f"p{i}" for i in range(4)
    ]
    with pytest.raises(UsageError):  # bad input is wrong for every server: it stops the run
        [ev async for ev in guarded("a", server("a", 1, UsageError("bad")))]
