"""Per-helper summaries for the views: the final one when a helper has finished, otherwise a
live one from the helper's ScoreBook (metrics code, recomputed only when a sample was scored
and at most a few times a second, since its bootstrap is not free)."""

from __future__ import annotations

import time

from kltui.metrics.summary import Summary
from kltui.session.store import HelperState

LIVE_SUMMARY_MIN_INTERVAL_S = 0.5


class Summaries:
    """Per-helper summaries for the views, live ones recomputed at most twice a second."""

    def __init__(self, clock=time.monotonic) -> None:
        self._cache: dict[str, tuple[int, int, float, Summary]] = {}
        self._clock = clock

    def clear(self) -> None:
        """Forget every cached live summary."""
        self._cache.clear()

    def get(self, st: HelperState, *, force: bool = False) -> Summary | None:
        """A helper's summary: final, else live from its ScoreBook, else None."""
        if st.summary is not None:
            return st.summary
        if st.n_scored == 0:
            return None
        now = self._clock()
        key = st.key
        hit = self._cache.get(key)
        stamp = (id(st), st.n_scored)
        if hit is not None and hit[:2] == stamp:
            return hit[3]
        if hit is not None and not force and now - hit[2] < LIVE_SUMMARY_MIN_INTERVAL_S:
            return hit[3]
        figures = st.book.summary(
            n_samples=st.n_samples, n_skipped=len(st.skipped), threshold=st.threshold
        )
        summary = Summary.of({**figures, "live": True})
        self._cache[key] = (*stamp, now, summary)
        return summary
