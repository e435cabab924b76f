"""What a user reads at 80x24 and 120x40 (issue 33 items 1-4): every key in the footer, the
server's settings on one line, the legend, the diagnosis cut only where a clause ends."""

from __future__ import annotations

import pytest
from textual.widgets._toast import Toast

from kltui.readings.diagnosis import diagnose
from kltui.session.helper_view import HelperView
from kltui.tui.widgets.counters import Counters
from kltui.tui.widgets.diagnosis import CONDITION_LABEL, DiagnosisBar, clause_cuts
from kltui.tui.widgets.footer import KltuiFooter
from kltui.tui.widgets.samples import SampleTable
from kltui.words.diagnosis import said
from tests.tui.kit import drawn, replayed, until
from tests.tui.test_snapshots import FAULT, NOISE, replay


def screen_text(app) -> str:
    """The whole screen as a user reads it, one line per row."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)


async def settle(pilot, app) -> None:
    await replayed(pilot, app)
    footer = app.query_one(KltuiFooter)
    # the footer folds after its first layout: wait until its keys are laid out and fit
    await until(pilot, lambda: footer.query("FooterKey") and footer.max_scroll_x == 0, 10)
    app.refresh_views()
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_every_footer_key_is_on_screen(size):
    app = replay(FAULT)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        footer = app.query_one(KltuiFooter)
        bottom = screen_text(app).splitlines()[-1]
        assert footer.max_scroll_x == 0, bottom
        for key in ("+-0 Zoom", "⏎ ", "q Quit", "? Help", "] Next", "f ", "r Re-run", "s "):
            assert key in bottom, (key, bottom)
        assert ("1st div" in bottom) if footer.folded else ("First divergence" in bottom)
        # the drill-down's footer too
        await pilot.press("f", "enter")
        await until(pilot, lambda: "esc Back" in screen_text(app).splitlines()[-1], 10)
        bottom = screen_text(app).splitlines()[-1]
        for key in ("esc Back", "n Next tail", "p Prev tail", "w Worst", "? Help", "s "):
            assert key in bottom, (key, bottom)


async def test_the_footer_unfolds_when_the_terminal_widens():
    app = replay(NOISE)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        footer = app.query_one(KltuiFooter)
        assert footer.folded
        await pilot.resize_terminal(160, 50)
        await until(pilot, lambda: not footer.folded and "^p" in screen_text(app), 10)
        bottom = screen_text(app).splitlines()[-1]
        assert "First divergence" in bottom and "Screenshot" in bottom and "^p" in bottom


async def test_the_server_settings_fold_to_one_line_at_80x24():
    # docs/USING.md: "the server settings fold to one line" (model, tp, dtype, radix, deterministic);
    # the line showed only the URL and the version
    app = replay(FAULT)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        line = screen_text(app).splitlines()[1]
        for setting in (
            "127.0.0.1:",
            "checkpoint",
            "tp 1",
            "float32",
            "radix on",
            "deterministic on",
        ):
            assert setting in line, (setting, line)
        assert "…" not in line, line


async def test_widening_back_from_80x24_restores_the_full_header():
    # issue 33 item 3: the server panel kept the short terminal's one line after widening
    app = replay(FAULT)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.resize_terminal(160, 50)
        await until(pilot, lambda: "prompts builtin" in screen_text(app), 10)
        await pilot.pause(0.2)
        rows = screen_text(app).splitlines()
        assert "kltui 0.1.0" in rows[0] and rows[0].rstrip().endswith("FAIL"), rows[0]
        panel = rows[1 : 1 + next(i for i, r in enumerate(rows[1:]) if r.startswith("╰")) + 1]
        inside = [r.strip("│ ") for r in panel[1:-1]]
        assert inside and all(inside), panel  # no blank line left from another width
        text = " ".join(inside)
        for setting in ("attn torch_native", "page 1", "cuda graph off", "fault window-evict"):
            assert setting in text, (setting, inside)
        assert inside[-1].startswith("prompts builtin"), inside
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: "deterministic on" in screen_text(app).splitlines()[1], 10)


def diagnosis_rows(app) -> list[str]:
    return [r.strip("│").strip() for r in drawn(app.query_one(DiagnosisBar)).splitlines()[1:-1]]


async def test_the_diagnosis_line_at_80x24_ends_where_a_clause_ends():
    # issue 33 item 1: "condition 2 (state bug): match is bit-identical but" (cut mid-sentence)
    app = replay(FAULT)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        (d,) = diagnose(app.store)
        (row,) = diagnosis_rows(app)
        assert row.startswith("COND 2 ") and row.endswith(" …"), row
        shown = row.removeprefix("COND 2").strip().removesuffix("…").strip()
        assert len(shown) in clause_cuts(said(d).label) and said(d).label.startswith(shown), (
            shown,
            said(d).label,
        )
        assert "d: in full" in drawn(app.query_one(DiagnosisBar)).splitlines()[-1]


@pytest.mark.parametrize(("path", "size"), [(NOISE, (160, 50)), (FAULT, (120, 40))])
async def test_the_next_step_is_shown_in_full_where_there_is_room(path, size):
    # issue 33 item 4: the "next:" line was cut even at 160 columns
    app = replay(path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        (d,) = diagnose(app.store)
        rows = diagnosis_rows(app)
        at = next(i for i, r in enumerate(rows) if r.startswith("next: "))
        step = " ".join(rows[at:]).removeprefix("next: ")
        assert step.split() == said(d).next_step.split(), rows
        label = " ".join(r for r in rows[:at] if not r.startswith("suspect: "))
        mark = next(b for b in CONDITION_LABEL.values() if label.startswith(f"{b} "))
        label = label.removeprefix(mark).strip()  # after the badge ("COND 1", "…" ...)
        if not label.endswith("…"):
            assert label.split() == said(d).label.split(), rows  # all of it
        else:
            shown = label.removesuffix("…").strip()
            assert said(d).label.startswith(shown) and len(shown) in clause_cuts(said(d).label), (
                rows
            )


@pytest.mark.parametrize("size", [(100, 24), (110, 30), (120, 40), (140, 45)])
async def test_a_cut_verdict_keeps_its_cause_and_the_next_step_from_100_columns(size):
    # issue 46 item 4: at 110 columns the finished dashboard showed only "condition 2 (state
    # bug): …", the cause (the state path) one key away
    app = replay(FAULT)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        (d,) = diagnose(app.store)
        assert d.condition == 2 and said(d).suspects, d
        rows = diagnosis_rows(app)
        at = next(i for i, r in enumerate(rows) if r.startswith("next: "))
        verdict = " ".join(rows[:at])  # the verdict's rows, and the suspect's where it is cut
        assert verdict.startswith("COND 2 "), rows
        assert said(d).suspects[0].split(" (")[0] in verdict, (
            rows,
            said(d).suspects,
        )  # the path's name
        for row in rows[:at]:
            if row.startswith("suspect: "):  # one line, cut at a word at most
                shown = row.removeprefix("suspect: ").removesuffix("…").strip()
                assert said(d).suspects[0].startswith(shown), (row, said(d).suspects)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)])
async def test_the_heatmap_legend_is_whole_on_screen(size):
    # issue 33: gone at 80x24, cut at 120x40 (and its "non-finite" at 160)
    app = replay(FAULT)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        box = app.query_one("#heat-legend")
        assert box.display and box.region.height == 1, box.region
        row = screen_text(app).splitlines()[box.region.y]
        text = row[box.region.x : box.region.right]
        for part in ("k3 ", " 0 ", "<1e-12", "≥1e0", "decoded", "◆ 1st div"):
            assert part in text, (part, text)
        assert text.rstrip().endswith("non-finite" if size[0] >= 200 else "nan"), text


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (110, 36)])
async def test_every_sample_column_is_on_screen(size):
    # issue 33 item 2: @pos, 1st div and tail were past the table's right edge at 120x40; at
    # 100-119 columns (beside the counters) only the sample's lengths may be cut
    app = replay(FAULT)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        table = app.query_one(SampleTable)
        rows = drawn(table).splitlines()
        header = rows[1].strip("│ ▁▂▃▄▅▆▇█")
        assert header.startswith("sample mean k3    max k3     @pos  1st div tail"), header
        st = app.selected_state()
        m = st.book.samples[0].metrics
        first = rows[2].strip("│ ▁▂▃▄▅▆▇█").split()
        culprit = [str(m.argmax_k3), str(m.first_divergence), str(m.n_tail)]
        assert first[5:8] == culprit, rows[2]
        if size[0] != 110:
            assert table.max_scroll_x == 0, table.virtual_size
            assert header.endswith("tokens prompt cached"), header
            sc = st.book.samples[0]
            assert first[8:] == [str(m.n_tokens), str(sc.prompt_len), str(sc.cached_tokens)]


async def test_the_gate_source_is_read_in_full_in_the_counters():
    # issue 33 item 4: "gate from default 0.002 (SGLang CI…" was always cut
    app = replay(NOISE)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        st = app.selected_state()
        label = HelperView.of(st, app.summaries.get(st)).threshold_source.label
        rows = [r.strip("│").strip() for r in drawn(app.query_one(Counters)).splitlines()[1:-1]]
        at = next(i for i, r in enumerate(rows) if r.startswith("gate from "))
        text = " ".join(rows[at:]).removeprefix("gate from ")
        assert text.startswith(label) and "…" not in text, (label, rows)


@pytest.mark.parametrize(
    ("flags", "speed", "instant"),
    [([], None, True), (["--instant"], None, True), (["--speed", "1"], 1.0, False)],
)
def test_replay_opens_at_once_unless_a_pace_is_asked(monkeypatch, flags, speed, instant):
    # issue 59: replay played at real time by default; a reviewer wants the recording at once
    from kltui.cli import handlers
    from kltui.cli.commands import main
    from kltui.tui import launch

    seen: dict = {}
    monkeypatch.setattr(handlers, "use_tui", lambda args: True)  # as on a terminal
    monkeypatch.setattr(launch, "run_replay", lambda path, **kw: seen.update(kw) or 0)
    assert main(["replay", str(NOISE), *flags]) == 0
    assert (seen["speed"], seen["instant"]) == (speed, instant), seen


async def test_a_real_time_replay_on_request_says_so_without_a_toast():
    from kltui.session.recording import read_recording
    from kltui.tui.app import KltuiApp
    from kltui.tui.feeds import ReplayFeed
    from kltui.tui.widgets.header import TitleBar

    app = KltuiApp(ReplayFeed(read_recording(str(NOISE)), speed=1, instant=False))
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await pilot.pause(0.3)
        assert "×1 real time" in drawn(app.query_one(TitleBar))
        assert not list(app.screen.query(Toast))  # asked for: nothing to explain
    fast = KltuiApp(ReplayFeed(read_recording(str(NOISE)), speed=10, instant=False))
    assert "×10" in fast.feed.label()


def test_replay_help_says_the_default_and_the_recorded_pace(capsys):
    from kltui.cli.parser import make_parser

    with pytest.raises(SystemExit):
        make_parser().parse_args(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--speed 1: real time" in text and "opens at once" in text, text


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 50)])
async def test_the_cursor_line_drops_whole_parts_never_cuts_one(size):
    # the heatmap's cursor line was cut mid-number ("lp_a -5.2263 lp_b" at 80x24)
    app = replay(FAULT)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        line = " ".join(drawn(app.query_one("#heat-cursor")).split())
        sc = app.selected_state().book.samples[0]
        a, b = f"{float(sc.lp_a[0]):.6g}", f"{float(sc.lp_b[0]):.6g}"
        assert "…" not in line, line
        assert line.startswith("sample 0 · pos 0") and "k3 2.805e+00" in line, line
        assert f"{a} lp_b {b}" in line or f"lp {a} / {b}" in line, line
        assert line.endswith((b, "(k3 > 1e-03)")), line
