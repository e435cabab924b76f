"""Small things a new user trips over in the TUI (issue 33, item 7)."""

from __future__ import annotations

from textual.widgets._toast import Toast

from kltui.words.diagnosis import said
from kltui.words.screen_keys import OnlyIn, key_what, only_in
from kltui.words.screen_progress import Unscored, decoding_pace, unscored
from kltui.words.screen_toasts import Notice, notice
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
        assert notice(Notice.NO_PROBLEMS) in toasts(app)
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
    assert d.kind == "1", said(d).label
    name = CONDITION_LABEL["1"].split(" · ", 1)[1]
    assert said(d).label.startswith(f"condition 1 ({name}):"), (said(d).label, name)
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
            assert unscored(Unscored.NO_SAMPLE) in counters
            assert decoding_pace(1600, 0.1) in counters, counters
        app = replay_app(events)


# keys that close what they opened (c, d), go back or quit (escape, q), or step through the
# helpers on the dashboard and in the sweep matrix alike ([ and ]): one meaning in each place
TOGGLES = {"c", "d", "escape", "q", "left_square_bracket", "right_square_bracket"}


def test_every_other_key_means_one_thing_on_every_screen():
    # issue 59: `m` was "Max k3" in the drill-down and "Monitor" on the dashboard
    from collections import defaultdict

    from kltui.tui.bindings import binding_groups

    actions = defaultdict(set)
    for _, group in binding_groups():
        for b in group:
            for key in b.key.split(","):
                actions[key.strip()].add(b.action)
    clashes = {k: v for k, v in actions.items() if len(v) > 1 and k not in TOGGLES}
    assert not clashes, clashes
    assert actions["m"] == {"monitor"} and actions["w"] == {"max_k3"}


def toast_words(app) -> str:
    """The toasts' words, unwrapped."""
    return " ".join(toasts(app).replace("▌", " ").split())


async def test_a_and_m_say_where_they_apply_on_a_plain_dashboard():
    # issue 59: `a` and `m` did nothing and said nothing outside kltui ablate / kltui monitor
    app = replay_app(synth.session(n=3, length=16, helpers=("match",)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await replayed(pilot, app)
        await pilot.press("a")
        await pilot.pause()
        assert notice(Notice.NOT_A_SWEEP) in toast_words(app)
        await pilot.press("m")
        await pilot.pause()
        assert notice(Notice.NOT_A_MONITOR) in toast_words(app)
        assert len(app.screen_stack) == 1
        await pilot.press("question_mark")
        await pilot.pause()
        shown = " ".join(drawn(w) for w in app.screen.query("Static"))
        assert key_what("Sweep matrix", only_in(OnlyIn.ABLATE)) in shown, shown
        assert key_what("Monitor", only_in(OnlyIn.MONITOR)) in shown
