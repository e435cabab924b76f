"""The diagnosis screen (evidence, suspects, next step; hand-over to the dumper drill-down),
the A-vs-B server comparison and the re-run difference in the history."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from kltui.readings.compare import RerunEquality
from kltui.readings.cross_server import PairKind
from kltui.readings.diagnosis_parts import Command, CommandKind, StepKind
from kltui.session.events import RunFinished
from kltui.session.recording import read_recording
from kltui.tui.screens.compare import CompareScreen, pair_group
from kltui.tui.screens.diagnosis import DiagnosisScreen, diagnosis_group
from kltui.tui.screens.dumps_run import DumpsRunScreen
from kltui.words.advice import command
from kltui.words.compare import first_difference, rerun
from kltui.words.diagnosis import said
from kltui.words.evidence import line as evidence_line
from kltui.words.screen_panels import statistics_fold
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed

SIZE = (140, 45)
# every helper against the default (batch-variant) kernels: a diagnosis with statistics
NOISE = Path(__file__).parent / "data" / "noise.kltui.jsonl"
URL2 = "http://127.0.0.1:30001"


def plain(renderable) -> str:
    console = Console(width=200, record=True, file=None)
    with console.capture() as cap:
        console.print(renderable)
    return cap.get()


async def test_deterministic_server_with_noise_hands_over_to_the_dumper(tmp_path):
    events = synth.session(
        n=6, length=24, servers=[synth.server(enable_deterministic_inference=True)]
    )
    app = replay_app(events, dump_dir=str(tmp_path / "d"))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DiagnosisScreen)
        # the words as read, whatever the console's wrapping and styles
        text = " ".join(
            Text.from_ansi(plain(diagnosis_group(screen.diagnoses, screen))).plain.split()
        )
        assert "deterministic inference on" in text and "shape-variant" in text
        (d,) = screen.diagnoses  # noise on a deterministic server: the dumper, not the flag
        assert d.headline.deterministic is True  # so no step says to relaunch with it on
        steps = {d.step.kind} | {e.step.kind for e in d.evidence if hasattr(e, "step")}
        assert StepKind.RELAUNCH_DETERMINISTIC not in steps
        kernels = d.evidence[-1].step  # match's noise: what to do about its kernels
        assert (kernels.kind, kernels.deterministic) == (StepKind.NOTHING_TO_FIX, True)
        assert kernels.command == Command(CommandKind.DUMPS, server=synth.URL)
        assert command(kernels.command) in text  # its words: tests/unit/words
        await pilot.press("u")
        run = app.screen
        assert isinstance(run, DumpsRunScreen) and run.request.server == synth.URL
        assert run.request.dump_dir == (tmp_path / "d").resolve()
        assert run.request.command == (
            f"kltui dumps --server 127.0.0.1:30000 --dump-dir {(tmp_path / 'd').resolve()}"
        )
        await pilot.press("escape")
        assert isinstance(app.screen, DiagnosisScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, DiagnosisScreen)


def two_server_run(seed_b: int) -> list:
    servers = [synth.server(), synth.server(URL2, page_size=16)]
    run = synth.session(n=4, length=24, servers=servers, helpers=("match",), finish=False)
    run += synth.helper_events("match", url=URL2, n=4, length=24, seed=seed_b)
    return run + [RunFinished({"helpers": 2}, "pass")]


async def test_compare_view_shows_a_against_b():
    app = replay_app(two_server_run(seed_b=0))  # same seed: bit-identical values
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        (pair,) = screen.pairs
        assert pair.identical is True and pair.settings_differ == {"page_size": (1, 16)}
        assert "4/4 samples identical" in plain(pair_group(pair, {}))


async def test_compare_view_lists_where_servers_differ():
    app = replay_app(two_server_run(seed_b=5))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("c")
        (pair,) = app.screen.pairs
        assert pair.identical is False and pair.reading.kind == PairKind.KERNELS
        first = pair.helpers["match"].diff.first  # the first differing sample
        assert first is not None and (first.sample, first.first, first.side) == (0, 0, "ids")
        text = " ".join(plain(pair_group(pair, {})).split())
        assert first_difference(pair.helpers["match"].diff) in text


async def test_compare_needs_two_servers():
    app = replay_app(synth.session(n=3, length=16, helpers=("match",)))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("c")
        assert not isinstance(app.screen, CompareScreen)
        assert "nothing to compare" in app.last_message


async def test_history_says_where_a_rerun_first_differs():
    one = synth.session(n=3, length=16, helpers=("match",))
    other = one[:1] + synth.helper_events("match", n=3, length=16, seed=7) + one[-1:]
    app = replay_app(one + one + other)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        assert [r.identical for r in app.history] == [None, True, False]
        assert app.history[1].difference == rerun(RerunEquality(True))  # its words
        assert app.history[2].difference.startswith("match differs at sample 0 @ 0")


async def test_the_statistics_are_folded_until_space_shows_them():
    # issue 59: the statistical bullets ("a state bug needs p<0.00025 ...") lost reviewers;
    # the verdict and plain evidence come first, the statistics behind a key
    app = replay_app(read_recording(str(NOISE)).events)
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DiagnosisScreen) and screen.statistics is False
        (d,) = screen.diagnoses
        stats = [e for e in d.evidence if e.statistic]
        assert len(stats) == 4  # two paired tests and two stated limits in this recording
        folded = words_of(screen)
        assert said(d).label.split(":")[0] in folded.split("evidence")[0]  # the verdict first
        assert statistics_fold(4, shown=False) in folded
        for e in stats:
            assert " ".join(evidence_line(e).split()) not in folded
        await pilot.press("space")
        shown = words_of(screen)
        assert screen.statistics is True and statistics_fold(4, shown=True) in shown
        for e in stats:
            assert " ".join(evidence_line(e).split()) in shown
        await pilot.press("space")
        assert words_of(screen) == folded


def words_of(screen) -> str:
    return " ".join(drawn(screen.query_one("#diagnosis-detail")).split())


async def test_a_wrapped_bullet_goes_on_under_its_first_word():
    # a bullet too long for the screen wraps with a hanging indent, not at the left edge
    app = replay_app(read_recording(str(NOISE)).events)
    async with app.run_test(size=(100, 45)) as pilot:
        await replayed(pilot, app)
        await pilot.press("d")
        await pilot.press("space")
        (d,) = app.screen.diagnoses
        lines = drawn(app.screen.query_one("#diagnosis-detail")).splitlines()
        longest = max(said(d).evidence, key=len)
        assert len(longest) > 100  # wraps at this width
        first = next(i for i, ln in enumerate(lines) if ln.startswith(f"  · {longest[:20]}"))
        block = [lines[first]]
        while " ".join(" ".join(block).split()) != f"· {' '.join(longest.split())}":
            assert len(block) < 10, block
            block.append(lines[first + len(block)])
        assert len(block) > 1 and all(ln[:4] == "    " and ln[4] != " " for ln in block[1:]), block
