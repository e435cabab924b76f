"""`kltui ablate` in the TUI (issue 29): the matrix of configurations fills in live as a real
sweep runs (kltui launches each reference server itself), Enter opens a configuration's
dashboard, a configuration whose server dies mid-run is one line in its row with the others
kept; and a committed sweep folder read back, as a snapshot.

Sweeps are small (12 samples x 8 tokens, prompts of ~48 tokens); the bfloat16 base diverges
(condition 1) and deterministic=on removes it, as in tests/integration/test_ablate.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from kltui.cli.options import build_config
from kltui.cli.parser import make_parser
from kltui.cli.terminal import use_tui
from kltui.outputs.ablation import ablate_json
from kltui.outputs.ablation_matrix import Tone
from kltui.readings.ablation_kinds import Shape
from kltui.readings.ablation_outcome import outcome, reading
from kltui.run.ablate import SweepSpec, prepare
from kltui.run.sweep_manifest import load
from kltui.session.events import SampleScored
from kltui.session.recording import read_recording
from kltui.tui.app import KltuiApp
from kltui.tui.screens.ablation import AblationScreen
from kltui.tui.sweep_feed import SweepFeed
from kltui.tui.widgets.ablation import SweepMatrix
from kltui.untrusted import escape_controls
from kltui.words.ablation import verdict_line
from kltui.words.ablation_sweep import head_line, helper_pick, nothing_to_show
from kltui.words.chain import doc_lines
from tests.json_contract import validate
from tests.real.lifecycle import running
from tests.tui.kit import drawn_at, until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

DATA = Path(__file__).parent / "data"
SWEEP = DATA / "sweep"  # bfloat16 base; deterministic=on, cuda-graph=off, page-size=0
SIZE = (140, 45)
SIZES = ["--samples", "12", "--max-new-tokens", "8", "--max-prompt-tokens", "48"]
REFERENCE = f"{sys.executable} -m kltui.reference serve --dtype bfloat16"


def unwrapped(text: str) -> str:
    """Text as one line, its whitespace collapsed: a line the console or a widget wrapped
    compares with the line it was given."""
    return " ".join(text.split())


def live_feed(tmp_path: Path, *args: str, chain: bool = False) -> SweepFeed:
    """A sweep feed as `kltui ablate` builds it on a terminal (the launch's --help read here)."""
    ns = make_parser().parse_args(["ablate", *args, *SIZES])
    spec = SweepSpec(
        build_config(ns),
        tmp_path / "sweep",
        launch=tuple(ns.launch.split()),
        varies=tuple(ns.vary),
    )
    return SweepFeed(spec, plan=prepare(spec), chain=chain)


def cell(app: KltuiApp, name: str, column: str) -> str:
    """What the matrix's cell holds now, in full ("" while the row is not there): the cell on
    screen is it, cut to its column with an ellipsis where it is longer."""
    screen = app.screen
    if not isinstance(screen, AblationScreen):
        return ""
    table = screen.query_one(SweepMatrix)
    row = table.row(name)
    if name not in table.names or row is None:
        return ""
    full = str(getattr(row, column))
    if column in table.shown_columns:
        shown = str(table.get_cell(name, column))
        assert shown == full or (shown.endswith("…") and full.startswith(shown[:-1])), shown
    return full


async def test_the_matrix_fills_in_as_the_sweep_runs_and_enter_opens_a_configuration(tmp_path):
    feed = live_feed(
        tmp_path,
        *("--launch", REFERENCE, "--vary", "deterministic=on", "--vary", "page-size=0"),
        *("--helpers", "match"),
        chain=True,
    )
    app = KltuiApp(feed)
    seen: dict[str, list[str]] = {}
    texts: set[str] = set()  # every state line of deterministic=on
    followed = False
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AblationScreen), 30)
        while not feed.finished:
            texts.add(cell(app, "deterministic=on", "state"))
            for name in ("base", "deterministic=on", "page-size=0"):
                state = cell(app, name, "state").split(" ", 1)[0].rstrip(":")
                if state and (not seen.get(name) or seen[name][-1] != state):
                    seen.setdefault(name, []).append(state)
            # under the matrix the dashboard follows the configuration being measured
            base = feed.live.get("base")
            followed = followed or (base is not None and app.store is base.store is not None)
            assert pilot.app.is_running
            await pilot.pause(0.05)
        await pilot.pause(0.5)  # one more redraw of the matrix
        # each row went through what the sweep said of it, in order
        assert seen["base"][:3] == ["waiting", "starting", "running"] or seen["base"][:2] == [
            "starting",
            "running",
        ], seen
        assert seen["base"][-1] == "done" and seen["deterministic=on"][-1] == "done", seen
        assert "running" in seen["deterministic=on"] and followed
        # while it starts: its seconds and log line; while it runs: its helper's progress
        assert any(t.startswith("starting ") and " s · " in t for t in texts), texts
        assert any(t.startswith("running: match ") and t.endswith("/12 scored") for t in texts)
        assert cell(app, "page-size=0", "state").startswith(
            "failed: page-size=0: exited with code 2 before it was healthy; log "
        )
        assert cell(app, "page-size=0", "state").endswith("error: --page-size must be at least 1")
        # the figures are the reading's: removed, at the floor, not equal to the base
        assert cell(app, "deterministic=on", "avg") == "0"
        assert cell(app, "deterministic=on", "verdict") == "removed"
        assert app.screen.query_one(SweepMatrix).row("deterministic=on").verdict_tone is Tone.GOOD
        assert cell(app, "deterministic=on", "bit_equal") == "0/12"
        # match at the floor alone says nothing of the cache paths it did not test
        assert cell(app, "deterministic=on", "condition") == "inconclusive"
        assert cell(app, "base", "condition") == "1"
        assert cell(app, "base", "verdict") == "base"
        assert float(cell(app, "base", "avg")) > 1e-6
        verdict = drawn_at(app.screen, "#ablation-verdict")
        assert feed.sweep is not None
        ab = outcome(feed.sweep).ablation
        assert [(hv.helper, hv.shape, hv.sufficient) for hv in ab.verdict.helpers] == [
            ("match", Shape.REMOVED, ("deterministic=on",))
        ]
        # the box draws the reading's line, wrapped to its width
        assert unwrapped(verdict_line(ab)) in unwrapped(verdict), verdict
        # --chain ran after it (localized condition 1); the reference server has no dumper, so
        # it stops at a step it names, under the matrix
        chain = feed.sweep.chain
        assert chain is not None and chain["kind"] == "failed", chain
        assert chain["step"] in ("relaunch", "dumps") and chain["error"]
        assert feed.notes and unwrapped(doc_lines(chain)[-1]) in unwrapped(verdict), verdict
        # Enter on a row: that configuration's dashboard, on its run
        table = app.screen.query_one(SweepMatrix)
        table.move_cursor(row=table.names.index("deterministic=on"))
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, AblationScreen))
        assert app.store is feed.sweep.runs[1].store and app.store.finished is not None
        assert app.selected is not None and app.selected.startswith("match@")
        # `a` brings the matrix back, on the configuration shown
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, AblationScreen))
        assert app.screen.query_one(SweepMatrix).cursor_row == 1
        # a row with nothing measured says why and keeps the matrix up
        table = app.screen.query_one(SweepMatrix)
        table.move_cursor(row=2)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, AblationScreen)
        failed = feed.run_of("page-size=0")
        assert failed is not None and failed.status == "failed" and failed.error
        assert app.last_message == escape_controls(nothing_to_show("page-size=0", failed), 300)
        await pilot.press("q")
    assert feed.sweep is not None and outcome(feed.sweep).exit_code == 0


def _server_of(marker: str, flag: str) -> list[int]:
    """Pids of the reference servers (not their watchdogs) whose command line holds `marker`
    and `flag`."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = [w.decode() for w in (d / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        if marker in cmd and flag in cmd and not any("supervisor" in w for w in cmd):
            if running(int(d.name)):
                out.append(int(d.name))
    return out


async def test_a_server_that_dies_mid_run_is_its_rows_one_line_and_the_others_are_kept(tmp_path):
    marker = str(700_000_000 + os.getpid())  # a --random-seed no other server uses
    feed = live_feed(
        tmp_path,
        *("--launch", f"{REFERENCE} --random-seed {marker}"),
        *("--vary", "deterministic=on", "--vary", "cuda-graph=off"),
    )
    app = KltuiApp(feed)
    killed = None
    scored_before = 0
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AblationScreen), 30)
        while not feed.finished:
            lv = feed.live.get("deterministic=on")
            store = lv.store if lv is not None else None
            done = [st for st in (store.helpers.values() if store else ()) if st.finished]
            if killed is None and done:
                # match is measured on it, the cache helpers are running: its server dies
                pids = _server_of(marker, "--enable-deterministic-inference")
                assert len(pids) == 1, pids
                scored_before = sum(len(st.book.order) for st in done)
                os.kill(pids[0], signal.SIGKILL)
                killed = pids[0]
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        assert killed is not None, "the configuration finished before its server was killed"
        state = cell(app, "deterministic=on", "state")
        assert state.startswith(
            "failed: deterministic=on: the server exited with code -9 while kltui was using it"
        ), state
        assert "\n" not in state
        assert cell(app, "cuda-graph=off", "state").startswith("done")  # the sweep went on
        assert cell(app, "base", "state").startswith("done")
        # Enter on the dead one: what it measured before it died, on the dashboard
        table = app.screen.query_one(SweepMatrix)
        table.move_cursor(row=table.names.index("deterministic=on"))
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, AblationScreen))
        assert "measured so far, not a result" in app.last_message
        assert app.store is feed.live["deterministic=on"].store
        await pilot.press("q")
    sweep = feed.sweep
    doc = ablate_json(sweep, outcome(sweep))
    validate(doc, "ablation")
    runs = {c["name"]: c for c in doc["sweep"]["configs"]}
    assert runs["deterministic=on"]["status"] == "failed"
    assert runs["deterministic=on"]["error_kind"] == "died"
    assert runs["base"]["status"] == runs["cuda-graph=off"]["status"] == "measured"
    reading = {c["name"]: c for c in doc["ablation"]["configs"]}
    assert reading["deterministic=on"]["measured"] is False
    assert reading["cuda-graph=off"]["measured"] is True
    # nothing measured is lost: the dead configuration's recording holds what it scored, and
    # the sweep folder read back gives the same document
    rec = read_recording(str(sweep.folder / "deterministic=on.kltui.jsonl"))
    assert sum(isinstance(ev, SampleScored) for ev in rec.events) >= scored_before > 0
    assert (
        ablate_json(load(sweep.folder), outcome(load(sweep.folder)))["ablation"] == doc["ablation"]
    )
    assert not _server_of(marker, REFERENCE.split()[-1])  # every server stopped


async def test_a_sweep_folder_read_back_switches_helpers_and_opens_a_recording():
    feed = SweepFeed.replay(load(SWEEP))
    app = KltuiApp(feed)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AblationScreen))
        await pilot.pause(0.3)
        head = drawn_at(app.screen, "#ablation-head")
        sweep = feed.sweep
        assert sweep is not None and sweep.total_s is not None and not sweep.interrupted
        assert [r.status for r in sweep.runs] == ["measured"] * 3 + ["failed"]
        assert unwrapped(head_line(sweep)) in unwrapped(head), head
        screen = app.screen
        assert isinstance(screen, AblationScreen)
        names = screen.helpers()
        assert len(names) == 3 and screen.helper == names[0] == "match"
        assert helper_pick("match", names) in head
        assert cell(app, "cuda-graph=off", "verdict") == "changed nothing"
        # coloured by its kind (a trap that took effect: plain), never by its words
        assert screen.query_one(SweepMatrix).row("cuda-graph=off").verdict_tone is Tone.PLAIN
        assert cell(app, "cuda-graph=off", "bit_equal") == "12/12"
        await pilot.press("right_square_bracket")
        await pilot.pause(0.3)
        assert screen.helper == names[1] == "prefill_cache_hit"
        assert helper_pick(names[1], names) in drawn_at(app.screen, "#ablation-head")
        # the highlighted row in full under the matrix: its helper's reading
        await pilot.press("down")
        await pilot.pause(0.2)
        detail = drawn_at(app.screen, "#ablation-detail")
        assert detail.startswith("prefill_cache_hit: ") and "(removed;" in detail
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, AblationScreen))
        assert app.store is feed.sweep.runs[1].store
        assert app.status.replay_label.endswith("· deterministic=on")
        # a sweep is never re-run from the TUI
        await pilot.press("r")
        await pilot.press("escape")
        assert feed.sweep.runs[1].store is app.store
        await pilot.press("q")


def test_the_tui_is_the_default_on_a_terminal_only(monkeypatch):
    ns = make_parser().parse_args(["ablate", "--replay", str(SWEEP)])
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert use_tui(ns) is True
    assert use_tui(make_parser().parse_args(["ablate", "--replay", "x", "--headless"])) is False
    assert use_tui(make_parser().parse_args(["ablate", "--replay", "x", "--json", "-"])) is False
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert use_tui(ns) is False


def test_snapshot_of_a_sweep_read_back(snap_compare):
    async def run_before(pilot) -> None:
        await until(pilot, lambda: isinstance(pilot.app.screen, AblationScreen))
        await pilot.pause(0.3)

    app = KltuiApp(SweepFeed.replay(load(SWEEP)))
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("width", [80, 100, 130, 200])
def test_snapshot_of_the_matrix_laid_out_for_the_width(snap_compare, width):
    # issue 44: at 130 columns the long verdict pushed the state column off screen and cells
    # were cut without an ellipsis; every width keeps the state column, cut cells end in "…"
    async def run_before(pilot) -> None:
        await until(pilot, lambda: isinstance(pilot.app.screen, AblationScreen))
        await pilot.pause(0.3)
        table = pilot.app.screen.query_one(SweepMatrix)
        assert table.shown_columns[-1] == "state"
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= table.size.width

    app = KltuiApp(SweepFeed.replay(load(SWEEP)))
    assert snap_compare(app, terminal_size=(width, 40), run_before=run_before)


def test_the_matrix_layout_keeps_the_state_column_at_every_width():
    from kltui.tui.widgets.ablation import FULL_WIDTH, MID_WIDTH, layout

    names = ["base", "deterministic=on", "--fault=batch-switch:4+--max-running-requests=1"]
    for width in range(60, 240):
        cols = layout(width, names)
        keys = [k for k, _, _ in cols]
        assert keys[-1] == "state" and keys[0] == "name", width
        assert ("tail" in keys) == (width >= FULL_WIDTH)
        assert ("bit_equal" in keys) == (width >= MID_WIDTH)
        if width >= 75:
            assert sum(w for _, _, w in cols) <= width, width


def test_snapshot_of_a_stressed_sweep_read_back(snap_compare):
    # `kltui ablate --stress light` on a deterministic base whose kernel switches above 6
    # running requests: quiet, every configuration passes; under load each has a state bug,
    # and the matrix must say so beside the quiet verdict (tests/tui/data/sweep-stress)
    async def run_before(pilot) -> None:
        await until(pilot, lambda: isinstance(pilot.app.screen, AblationScreen))
        await pilot.pause(0.3)

    app = KltuiApp(SweepFeed.replay(load(DATA / "sweep-stress")))
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_row_cut_short_while_its_server_started_reads_interrupted_once_the_sweep_ended():
    from kltui.outputs.ablation_matrix import STARTING, Live, matrix_rows

    sweep = load(SWEEP)
    run = sweep.runs[3]
    run.status, run.error = "not run", None  # as a sweep quit while page-size=0 started
    live = {run.name: Live(phase=STARTING, seconds=3.0, log_line="loading")}
    row = matrix_rows(sweep, reading(sweep), "match", live)[3]
    assert (row.state_kind, row.state) == (
        "interrupted",
        "interrupted while starting: not a result",
    )
    sweep.total_s = None  # still going: its start progress
    row = matrix_rows(sweep, reading(sweep), "match", live)[3]
    assert (row.state_kind, row.state) == ("starting", "starting 3 s · loading")


async def test_quitting_mid_sweep_stops_every_server_and_keeps_what_was_measured(tmp_path):
    import time

    marker = str(710_000_000 + os.getpid())
    feed = live_feed(
        tmp_path,
        *("--launch", f"{REFERENCE} --random-seed {marker}", "--helpers", "match"),
        *("--vary", "deterministic=on", "--vary", "cuda-graph=off"),
    )
    app = KltuiApp(feed)
    async with app.run_test(size=SIZE) as pilot:
        # the base measured, the next one running: q
        await until(pilot, lambda: feed.live.get("deterministic=on", None) is not None
                    and feed.live["deterministic=on"].phase == "running", 120)  # fmt: skip
        assert _server_of(marker, "--enable-deterministic-inference")
        await pilot.press("q")
    sweep = feed.sweep
    assert sweep is not None and sweep.interrupted and outcome(sweep).exit_code == 130
    assert [r.status for r in sweep.runs] == ["measured", "interrupted", "not run"]
    t0 = time.monotonic()
    while left := _server_of(marker, "--random-seed"):
        assert time.monotonic() - t0 < 5, f"still running after the TUI quit: {left}"
        await asyncio.sleep(0.05)
    # the manifest says so, and the base's recording reads back as measured
    again = load(sweep.folder)
    assert again.interrupted and again.runs[0].store is not None


async def test_a_verdict_longer_than_its_box_scrolls_and_says_so():
    # issue 44: the verdict pane cut a long verdict + chain line silently at 10 rows; now it
    # takes the room the matrix leaves and scrolls in its own box, whose border says how much is
    # out of view and which key scrolls
    feed = SweepFeed.replay(load(SWEEP))
    notes = [f"note {i}: [bold]not markup[/bold] on a long line" for i in range(30)]
    feed.notes.extend(notes)
    app = KltuiApp(feed)
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AblationScreen))
        await pilot.pause(0.3)
        box = app.screen.query_one("#ablation-verdict-box")
        assert box.has_class("cut")
        assert str(box.border_subtitle).endswith("more lines · v to scroll"), box.border_subtitle

        # the subtitle counts exactly the rows out of view, once the layout settled (a loaded
        # machine drew it before the scrollbar rewrapped the text); the notes are there, literally
        def hidden() -> int:
            return int(str(box.border_subtitle).split()[0])

        await until(pilot, lambda: box.max_scroll_y == hidden())
        assert box.scroll_y == 0 and hidden() > 0
        assert notes[-1] in drawn_at(app.screen, "#ablation-verdict")
        await pilot.press("v")
        await pilot.pause(0.1)
        assert box.has_focus and str(box.border_subtitle).startswith("↑ ↓ scroll")
        await pilot.press("end")
        await pilot.pause(0.2)
        assert box.scroll_y == box.max_scroll_y > 0
        await pilot.press("v")
        await pilot.pause(0.1)
        assert app.screen.query_one(SweepMatrix).has_focus
        await pilot.press("q")


def test_snapshot_of_a_verdict_cut_to_its_box(snap_compare):
    async def run_before(pilot) -> None:
        await until(pilot, lambda: isinstance(pilot.app.screen, AblationScreen))
        await pilot.pause(0.3)

    feed = SweepFeed.replay(load(SWEEP))
    feed.notes.extend(f"note {i}: a line the box has no room for" for i in range(30))
    assert snap_compare(KltuiApp(feed), terminal_size=(100, 40), run_before=run_before)
