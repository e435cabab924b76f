"""Every screen's key bindings, grouped for the help screen and the keymap check."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from kltui.tui.screens.ablation import AblationScreen
from kltui.tui.screens.compare import CompareScreen
from kltui.tui.screens.diagnosis import DiagnosisScreen
from kltui.tui.screens.fleet import FleetScreen
from kltui.tui.screens.monitor import MonitorScreen
from kltui.tui.widgets.heatmap import Heatmap
from kltui.tui.widgets.samples import SampleTable
from kltui.words.screen_keys import OnlyIn, only_in

# The dashboard's own keys (KltuiApp.BINDINGS), here so the help screen lists them without
# importing the app.
PROBLEMS = Binding("e", "problems", "Problems", id="app.problems")
DASHBOARD_BINDINGS: list[BindingType] = [
    # first of the dashboard's keys: the footer cuts what does not fit at its right end, and `e`
    # (shown only while the run has problems: DashboardActions.check_action) must survive 80
    # columns
    PROBLEMS,
    Binding("q", "quit", "Quit", id="app.quit"),
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.interrupt"),
    Binding("question_mark", "help", "Help", key_display="?", id="app.help"),
    Binding(
        "right_square_bracket",
        "cycle_helper(1)",
        "Next helper",
        key_display="]",
        id="app.next-helper",
    ),
    Binding(
        "left_square_bracket",
        "cycle_helper(-1)",
        "Prev helper",
        key_display="[",
        show=False,
        id="app.prev-helper",
    ),
    Binding("f", "first_divergence", "First divergence", id="app.first-divergence"),
    Binding("r", "rerun", "Re-run", id="app.rerun"),
    Binding("s", "save_svg", "Screenshot", id="app.screenshot"),
    Binding("d", "diagnosis", "Diagnosis", show=False, id="app.diagnosis"),
    # the multiturn helper's branch tree (group > branch > turn)
    Binding("t", "branches", "Turns (multiturn)", show=False, id="app.branches"),
    Binding(
        "c", "compare", "Compare servers (a fleet: its replicas)", show=False, id="app.compare"
    ),
    # kltui ablate: the matrix of configurations (shown only in a sweep: SweepActions)
    Binding("a", "sweep", "Sweep matrix", tooltip=only_in(OnlyIn.ABLATE), id="app.sweep"),
    # kltui monitor: the probes so far (shown only under a monitor: MonitorActions)
    Binding("m", "monitor", "Monitor", tooltip=only_in(OnlyIn.MONITOR), id="app.monitor"),
]


def _help_order(bindings: list[Binding]) -> list[Binding]:
    """The dashboard's keys as the help lists them: `e` after the everyday keys."""
    rest = [b for b in bindings if b is not PROBLEMS]
    at = next(i for i, b in enumerate(rest) if b.id == "app.screenshot") + 1
    return [*rest[:at], PROBLEMS, *rest[at:]]


def binding_groups() -> list[tuple[str, list[Binding]]]:
    """Every screen's keys, grouped by screen, in the help's order."""
    from kltui.tui.screens.drilldown import DrillDown as _Drill

    def own(cls) -> list[Binding]:
        return [b for b in cls.BINDINGS if isinstance(b, Binding)]

    return [
        ("Dashboard", _help_order([b for b in DASHBOARD_BINDINGS if isinstance(b, Binding)])),
        ("Heatmap", own(Heatmap)),
        ("Sample table", own(SampleTable) + [Binding("enter", "open", "Drill down")]),
        ("Drill-down", own(_Drill)),
        ("Diagnosis", own(DiagnosisScreen)),
        ("Servers compared", own(CompareScreen)),
        ("Fleet", own(FleetScreen) + [Binding("enter", "open", "Open the replica's dashboard")]),
        (
            "Sweep",
            own(AblationScreen) + [Binding("enter", "open", "Open the configuration's dashboard")],
        ),
        ("Monitor", own(MonitorScreen) + [Binding("enter", "open", "Open the probe's dashboard")]),
        (
            "Anywhere",
            [
                Binding("ctrl+p", "command_palette", "Command palette"),
                Binding("tab", "focus_next", "Next panel"),
            ],
        ),
    ]


def all_binding_ids() -> set[str]:
    """The id of every key binding (what `keymap:` may remap)."""
    return {b.id for _, group in binding_groups() for b in group if b.id}
