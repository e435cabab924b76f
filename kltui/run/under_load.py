"""A server's helper stream under `--stress` traffic (`run/stress.py`'s `Traffic`): paused for
each flush, resumed (primed) when the next phase starts, squeezed before prefill_cache_hit's
hits, stopped when the stream ends, with a StressTick at each of these moments.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from kltui.registry import HELPERS, Role
from kltui.run.stress import Traffic
from kltui.session.events import Event, HelperFinished, PhaseChanged

SQUEEZED = ("prefill_cache_hit",)  # the helpers whose hits are squeezed (run/stress.py)


def _cold_path(helper: str) -> bool:
    """The helpers whose decode must be cold: the baseline path every other is compared with
    (match checks that nothing was reused after its flush)."""
    spec = HELPERS.get(helper)
    return spec is not None and spec.role == Role.BASELINE


async def under_load(traffic: Traffic, inner: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """One server's helper stream with the traffic running during its phases: paused for
    each flush, resumed (primed) when the next phase starts, stopped when the stream ends;
    a StressTick at the start, at every phase and at the end."""
    yield await traffic.start()
    try:
        async for ev in inner:
            if isinstance(ev, PhaseChanged):
                if ev.phase == "flush":
                    await traffic.pause()
                    yield ev
                    yield traffic.tick(f"{ev.helper}/flush")
                    continue
                if ev.helper in SQUEEZED and ev.phase in ("warm", "decode"):
                    # warm alone (paused since its flush), then the squeeze before the hits;
                    # the tick first, so the phase's traffic includes the squeeze
                    tick = traffic.tick(f"{ev.helper}/{ev.phase}")
                    if ev.phase == "decode":
                        await traffic.squeeze(ev.helper)
                        traffic.resume_soon()
                    yield ev
                    yield tick
                    continue
                # counted before priming: the phase's requests include the first ones
                tick = traffic.tick(f"{ev.helper}/{ev.phase}")
                await traffic.resume(
                    cold=ev.phase == "decode" and _cold_path(ev.helper),
                    ahead=ev.phase == "prefill",
                )
                yield ev
                yield tick
                continue
            if isinstance(ev, HelperFinished):
                yield ev
                yield traffic.tick(f"{ev.helper}/done")
                continue
            yield ev
    finally:
        end = await traffic.stop()
    yield end
