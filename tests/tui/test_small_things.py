"""Small things a new user trips over in the TUI (issue 33, item 7)."""

from __future__ import annotations

from textual.widgets._toast import Toast

from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed

SIZE = (140, 45)


def toasts(app) -> str:
    return "\n".join(drawn(t) for t in app.screen.query(Toast))


async def test_e_without_problems_says_so():
    app = replay_app(synth.session(n=3, length=16, helpers=("match",)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await replayed(pilot, app)
        assert not app.store.problems
        await pilot.press("e")
        await pilot.pause()
        assert "no problems" in toasts(app)
        assert len(app.screen_stack) == 1
        await pilot.press("q")


def test_condition_1_has_one_name_in_the_tui_and_the_html(tmp_path):
    from kltui.cli.report import load_store
    from kltui.outputs.reports.html import CONDITION_LABEL, html_report
    from kltui.readings.diagnosis import diagnose
    from tests.reports.synth import HelperSpec, record, run_events

    specs = [HelperSpec(h, noise=3e-2) for h in ("match", "prefill_cache_hit", "decode_cache_hit")]
    store, origin = load_store(record(tmp_path / "c1.jsonl", run_events(specs, n_samples=24)))
    (d,) = diagnose(store)
    assert d.kind == "1", d.label
    name = CONDITION_LABEL["1"].split(" · ", 1)[1]
    assert d.label.startswith(f"condition 1 ({name}):"), (d.label, name)
    assert f"condition 1 · {name}" in html_report(store, origin)


async def test_a_decoding_helper_shows_its_tokens_per_second_and_eta():
    # issue 59: minutes of "waiting for the first scored sample" with no estimate; a run cut
    # mid-decode: 8 samples x 48 tokens, 3 of the 8 samples' 16-token chunks per sample, the
    # recording's events 0.01 s apart
    events = synth.session(n=8, length=48, helpers=("match",), finish=False)
    decoding = [i for i, ev in enumerate(events) if type(ev).__name__ == "TokensDecoded"]
    events = events[: decoding[11] + 1]  # 12 chunks of 16 tokens: samples 0-3 whole
    app = replay_app(events)
    for width, want in ((160, "tok/s · ETA "), (100, "ETA ")):
        async with app.run_test(size=(width, 45)) as pilot:
            await replayed(pilot, app)
            row = drawn(app.query_one("HelperProgress"))
            assert "decoded 4/8" in row and want in row, row
            counters = drawn(app.query_one("Counters"))
            assert "waiting for the first scored sample" in counters
            assert "decoding at 1,600 tok/s, ETA 0.1s" in counters, counters
        app = replay_app(events)
