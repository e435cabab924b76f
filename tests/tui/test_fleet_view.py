"""The fleet view of a `--router` run: replicas as rows, helpers as columns, a verdict per
cell, the agreement groups; Enter opens the replica's own dashboard. 40 replicas, as a fleet of
rollout replicas can be."""

from __future__ import annotations

from kltui.session.events import RunFinished, RunStarted
from kltui.tui.screens.fleet import FleetScreen
from kltui.words.fleet import failure_line, summary_line
from kltui.words.screen_panels import fleet_failed, fleet_group
from tests.tui import synth
from tests.tui.kit import drawn_at, replay_app, replayed, until

HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")
ROUTER = "http://127.0.0.1:30000"
ODD = {7: {"enable_deterministic_inference": False}, 23: {"enable_deterministic_inference": False}}
SIZE = (140, 45)


DET = "enable_deterministic_inference"


def flat(text: str | None) -> str:
    """`text` with its whitespace as the drawn screen's, joined."""
    return " ".join((text or "").split())


def url(i: int) -> str:
    return f"http://10.0.0.{i + 1}:30000"


def fleet_events(n: int = 40, require: str = "gate", odd: dict = ODD) -> list:
    """A fleet run over `n` replicas; replicas 7 and 23 (or those of `odd`) run without
    deterministic inference, and their numbers differ from the others' (another seed).
    `require`: --fleet-require."""
    urls = [url(i) for i in range(n)]
    servers = [
        synth.server(u, **{"enable_deterministic_inference": True, **odd.get(i, {})})
        for i, u in enumerate(urls)
    ]
    workers = [
        {
            "url": u,
            "worker_type": "regular",
            "is_healthy": True,
            "model_id": "kltui/tiny-llama-4l",
            "metadata": {},
            "tested": True,
            "note": None,
        }
        for u in urls
    ]
    ev: list = [
        RunStarted(
            run_id="0123456789ab",
            started_at=1_700_000_100.0,
            config={
                "helpers": list(HELPERS),
                "samples": 4,
                "max_new_tokens": 16,
                "servers": urls,
                "router": ROUTER,
                "fleet_require": require,
                "fleet": {"router": ROUTER, "workers": workers},
            },
            servers=servers,
            prompt_set={"source": "builtin", "n": 4, "tokens": 166, "sha256": "9f2c1e7a5b3d4c6e"},
            kltui_version="0.1.0",
        )
    ]
    for i, u in enumerate(urls):
        for k, h in enumerate(HELPERS):
            seed = k + (100 if i in odd else 0)
            ev.extend(synth.helper_events(h, url=u, n=4, length=16, seed=seed))
    verdict = "fail" if require == "identical" else "pass"  # as run/fleet.gated decides
    ev.append(RunFinished({"helpers": n * len(HELPERS)}, verdict))
    return ev


def open_fleet():
    async def run_before(pilot) -> None:
        app = pilot.app
        await replayed(pilot, app)
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        await pilot.pause()

    return run_before


def test_fleet_view_snapshot(snap_compare):
    assert snap_compare(replay_app(fleet_events()), terminal_size=SIZE, run_before=open_fleet())


async def test_fleet_view_lists_every_replica_and_enter_opens_its_dashboard():
    app = replay_app(fleet_events())
    async with app.run_test(size=SIZE) as pilot:
        await open_fleet()(pilot)
        screen = app.screen
        table = screen.query_one("#fleet-table")
        assert table.row_count == 40
        head = " ".join(drawn_at(screen, "#fleet-head").split())
        fl = screen.fleet  # 38 alike, two odd ones out by deterministic inference
        assert [len(g.replicas) for g in fl.groups] == [38, 2]
        assert [(o.replica, o.group, o.majority) for o in fl.odd] == [
            (url(i), 1, True) for i in ODD
        ]
        assert all(o.settings == {DET: (True, False)} for o in fl.odd)
        assert fl.groups[1].settings == {DET: False}
        assert flat(summary_line(fl)) in head  # its words (tests/unit/words/test_golden_fleet)
        assert fleet_group(2, 2, [(DET, "false")]) in head  # the screen's own
        assert "fleet must be identical" not in head  # the default gate
        row = [str(c) for c in table.get_row(url(23))]
        assert row[1] == "2" and row[2:] == ["≠ differs"] * 3
        assert [str(c) for c in table.get_row(url(5))][1:] == ["1", "= same", "= same", "= same"]
        table.move_cursor(row=23)
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, FleetScreen))
        assert app.selected == f"match@{url(23)}"
        assert url(23) in app.last_message


async def test_dashboard_of_40_replicas_lists_one_replica_and_groups_the_servers():
    app = replay_app(fleet_events())
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        app.select_helper(f"match@{url(7)}")
        app.refresh_views()
        await pilot.pause()
        servers = " ".join(drawn_at(app.screen, "#servers").split())
        assert "+ 37 more with these settings" in servers and "+ 1 more with" in servers
        helpers = drawn_at(app.screen, "#progress")
        assert helpers.count("@10.0.0.8:") == 3  # replica 7's three helpers, no other's
        assert "@10.0.0.9:" not in helpers and "@10.0.0.1:" not in helpers
        assert "+ 117 more on 39 servers (c)" in helpers
        await pilot.press("right_square_bracket")  # ] still steps through every helper
        assert app.selected == f"prefill_cache_hit@{url(7)}"


async def test_fleet_view_says_why_an_identical_fleet_failed():
    app = replay_app(fleet_events(require="identical"))
    async with app.run_test(size=SIZE) as pilot:
        await open_fleet()(pilot)
        head = " ".join(drawn_at(app.screen, "#fleet-head").split())
        fl = app.screen.fleet
        assert fl.failed and [(o.replica, o.against) for o in fl.odd] == [
            (url(i), url(0)) for i in ODD
        ]
        assert flat(fleet_failed(failure_line(fl))) in head


async def test_an_identical_fleet_failure_names_three_odd_replicas_and_counts_the_rest():
    odd = {i: {"enable_deterministic_inference": False} for i in range(30, 40)}
    app = replay_app(fleet_events(require="identical", odd=odd))
    async with app.run_test(size=SIZE) as pilot:
        await open_fleet()(pilot)
        head = " ".join(drawn_at(app.screen, "#fleet-head").split())
        why = head[head.index("fleet must be identical: failed:") :]
        assert [url(i) in why for i in range(30, 40)] == [True] * 3 + [False] * 7
        fl = app.screen.fleet
        assert len(fl.odd) == 10 and flat(failure_line(fl)) in why  # 3 named, the rest counted
