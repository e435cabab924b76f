"""An imported file in the dashboard (`kltui FILE`): the same heatmap, sample table, diagnosis
and drill-down as a run, fed through the same stream (the snapshot: test_import_snapshot.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kltui.readings.imported import ImportKind
from kltui.rl.stream import HELPER, ImportOptions
from kltui.tui.app import KltuiApp
from kltui.tui.import_feed import ImportFeed
from kltui.words.diagnosis import said
from kltui.words.rl import label as import_label
from tests.rl.files import header, record, write_jsonl
from tests.tui.kit import until

SIZE = (140, 45)


def planted(folder: Path) -> Path:
    """20 samples of 30-90 tokens, seeded; trainer = rollout except planted offsets in samples
    3 (one big), 7 (a run of small ones) and 12 (at its first token)."""
    rng = np.random.default_rng(11)
    recs = []
    for i in range(20):
        n = int(rng.integers(30, 90))
        roll = np.round(-rng.exponential(0.8, n), 6)
        train = roll.copy()
        if i == 3:
            train[17] -= 1.5
        if i == 7:
            train[40:50] -= 0.02
        if i == 12:
            train[0] -= 0.3
        recs.append(record(rng.integers(1, 900, 8), rng.integers(1, 900, n), roll, train, id=i))
    return write_jsonl(
        folder / "planted.jsonl", recs, first=header(model="tiny", engine="reference")
    )


def import_app(path: Path) -> KltuiApp:
    ticks = iter(range(1_000_000))
    opts = ImportOptions(clock=lambda: 1_780_000_000.0 + 0.25 * next(ticks))
    return KltuiApp(ImportFeed(str(path), opts))


async def loaded(pilot) -> None:
    app = pilot.app
    await until(pilot, lambda: app.feed.finished)
    # toasts time out on the wall clock, so a loaded machine would snapshot them or not
    app.clear_notifications()
    app.refresh_views()
    await pilot.pause()


async def test_the_import_fills_the_dashboard(tmp_path):
    app = import_app(planted(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        st = app.store.helpers[f"{HELPER}@file:planted.jsonl"]
        assert st.n_scored == 20 and st.summary is not None
        assert sorted(s for s, x in st.book.samples.items() if x.metrics.n_nonzero) == [3, 7, 12]
        # the diagnosis line is the import's reading, not a condition
        from kltui.readings.diagnosis import diagnose

        (d,) = diagnose(app.store)
        assert d.condition is None and d.imported is not None
        assert (d.imported.kind, d.imported.differ, d.imported.samples) == (
            ImportKind.MISMATCH,
            3,
            20,
        )
        assert said(d).label == import_label(d.imported)  # the words, as said
        # f jumps to the first divergence, Enter opens the drill-down there
        await pilot.press("f", "enter")
        await pilot.pause()
        from kltui.tui.screens.drilldown import DrillDown

        assert isinstance(app.screen, DrillDown)
