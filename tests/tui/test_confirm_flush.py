"""The question before the first flush of a server that may be shared, driven both ways against
the real reference server (on 127.0.0.1: a shared host is simulated by the loopback check the
app is given, or is real when the server is busy with another client's requests)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from textual.css.query import NoMatches
from textual.widgets._toast import Toast

from kltui.run.config import RunConfig
from kltui.run.flush_gate import AskKind, AskReason
from kltui.tui import app as app_module
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed
from kltui.tui.screens.confirm_flush import ConfirmFlush
from kltui.words.flush import ask_reasons
from tests.tui.kit import StyledApp, drawn, until

SIZE = (140, 45)


@pytest.fixture(scope="module")
def server_url(reference_servers):
    """The session's shared reference server with the default settings."""
    return reference_servers.url()


@pytest.fixture
def asked(monkeypatch) -> list[ConfirmFlush]:
    """Every question the app puts up."""
    shown: list[ConfirmFlush] = []

    class Recorded(ConfirmFlush):
        def __init__(self, server: str, reasons: tuple[AskReason, ...], **kw) -> None:
            super().__init__(server, reasons, **kw)
            shown.append(self)

    monkeypatch.setattr(app_module, "ConfirmFlush", Recorded)
    return shown


async def on_another_host(url: str) -> bool:
    return False  # what the app's loopback check answers for a server on another machine


def small(url: str, **kw) -> RunConfig:
    return RunConfig(
        servers=[url], helpers=["match"], samples=4, max_new_tokens=8, max_prompt_tokens=48, **kw
    )


def words(widget) -> str:
    """What a widget draws, with its line wrapping and padding folded into single spaces."""
    return " ".join(drawn(widget).replace("▌", " ").split())


def toasts(app: KltuiApp) -> str:
    return " ".join(words(t) for t in app.screen.query(Toast))


async def question(pilot, app: KltuiApp) -> str:
    """Waits for the question to be up and drawn; its text."""
    await until(pilot, lambda: isinstance(app.screen, ConfirmFlush), timeout=60)

    def drawn_question() -> str:
        try:  # the screen is pushed before its widgets are mounted: wait for them too
            return words(app.screen.query_one("#flush-question"))
        except NoMatches:
            return ""

    await until(pilot, lambda: bool(drawn_question()))
    return drawn_question()


def finished(app: KltuiApp) -> bool:
    return app.store is not None and app.store.finished is not None and not app.status.running


async def cached_tokens(url: str) -> int:
    async with httpx.AsyncClient(base_url=url) as c:
        return (await c.get("/v1/loads?include=core")).json()["loads"][0]["num_used_tokens"]


async def test_cancel_stops_the_run_unflushed_and_yes_is_asked_once(server_url, asked):
    async with httpx.AsyncClient(base_url=server_url) as c:  # something in the cache to lose
        body = {"input_ids": [5, 6, 7, 8, 9], "sampling_params": {"max_new_tokens": 3}}
        assert (await c.post("/generate", json=body)).status_code == 200
    before = await cached_tokens(server_url)
    assert before > 0
    app = KltuiApp(LiveFeed(small(server_url), None), loopback=on_another_host)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        text = await question(pilot, app)
        assert AskKind.SHARED_HOST in [r.kind for r in asked[0].reasons]
        assert (
            server_url in text and ask_reasons(asked[0].reasons) in text
        )  # words: tests/unit/words
        assert app.store.run is not None and not app.store.helpers  # identified, nothing run
        await pilot.press("n")
        await until(pilot, lambda: finished(app))
        assert app.store.finished.verdict == "interrupted"
        assert not app.store.helpers
        note = app.store.problems[-1]
        assert (note.source, note.phase, note.fatal) == (server_url, "flush", False)
        assert "nothing was flushed or measured" in note.message
        await until(pilot, lambda: "nothing was flushed or measured" in toasts(app))
        assert [r.verdict for r in app.history] == ["interrupted"]
        assert await cached_tokens(server_url) >= before  # the other clients' cache is intact

        await pilot.press("r")  # a cancelled server is asked again
        await question(pilot, app)
        assert len(asked) == 2
        await pilot.click("#flush-yes")
        await until(pilot, lambda: finished(app), timeout=120)
        st = app.store.helpers[f"match@{server_url}"]
        assert st.summary is not None and st.n_scored + len(st.skipped) == 4
        assert app.store.finished.verdict in ("pass", "fail")

        await pilot.press("r")  # answered: not asked again in this session
        await until(pilot, lambda: len(app.history) == 3 and finished(app), timeout=120)
        assert len(asked) == 2
        assert app.store.helpers[f"match@{server_url}"].summary is not None
        await pilot.press("q")
    assert app.return_value in (0, 1)


async def test_read_only_dashboard_cannot_answer_flush(server_url, asked):
    """`kltui web --read-only`: a viewer must not act on the server, so only Cancel works."""
    app = KltuiApp(LiveFeed(small(server_url), None), loopback=on_another_host, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        text = await question(pilot, app)
        assert "read-only" in text and "--yes-flush" in text
        assert app.screen.query_one("#flush-yes").disabled
        await pilot.press("y")
        await pilot.pause()  # every message handled: a working `y` would have answered
        assert isinstance(app.screen, ConfirmFlush) and app.store.finished is None
        await pilot.press("n")
        await until(pilot, lambda: finished(app))
        assert app.store.finished.verdict == "interrupted" and not app.store.helpers
        await pilot.press("q")
    assert len(asked) == 1


@pytest.mark.parametrize(
    "cfg_kw, loopback",
    [
        ({"yes_flush": True}, on_another_host),  # --yes-flush / yes_flush: true
        ({}, None),  # the real check: 127.0.0.1 and idle
    ],
    ids=["yes-flush", "loopback-idle"],
)
async def test_no_question(server_url, asked, cfg_kw, loopback):
    kw = {"loopback": loopback} if loopback else {}
    app = KltuiApp(LiveFeed(small(server_url, **cfg_kw), None), **kw)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: finished(app), timeout=120)
        assert app.store.helpers[f"match@{server_url}"].summary is not None
        await pilot.press("q")
    assert asked == []


async def test_a_busy_loopback_server_is_asked_about(server_url, asked):
    """Another client's long batch is running: kltui asks, even on 127.0.0.1."""
    batch = {
        "input_ids": [[5 + i, 6, 7] for i in range(32)],
        "sampling_params": {"max_new_tokens": 2000, "ignore_eos": True},
        "stream": True,
    }
    async with httpx.AsyncClient(base_url=server_url, timeout=120) as other:
        async with other.stream("POST", "/generate", json=batch) as resp:
            lines = resp.aiter_lines()
            await anext(lines)  # decoding has started
            app = KltuiApp(LiveFeed(small(server_url), None))
            async with app.run_test(size=SIZE) as pilot:
                text = await question(pilot, app)
                (busy,) = asked[0].reasons  # on 127.0.0.1: asked because it is busy
                assert busy.kind is AskKind.BUSY and busy.requests > 0 and busy.route == "/v1/loads"
                assert ask_reasons(asked[0].reasons) in text
                await pilot.press("escape")
                await until(pilot, lambda: finished(app))
                assert app.store.finished.verdict == "interrupted" and not app.store.helpers
                await pilot.press("q")
            # leaving the block closes the stream: the server stops decoding the batch
    assert app.return_value == 130
    assert len(asked) == 1
    # idle again for the next test (the server is shared): the closed stream's batch ends
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(base_url=server_url) as c:
        while True:
            loads = (await c.get("/v1/loads")).json()["loads"][0]
            if loads["num_running_reqs"] + loads["num_waiting_reqs"] == 0:
                break
            assert time.monotonic() < deadline, f"the server is still busy after 30 s: {loads}"
            await asyncio.sleep(0.05)  # the poll's interval


class _Host(StyledApp):
    def __init__(self, screen: ConfirmFlush) -> None:
        super().__init__()
        self.question = screen
        self.answers: list[bool] = []

    def on_mount(self) -> None:
        self.push_screen(self.question, callback=self.answers.append)


async def test_server_name_and_reason_are_shown_literally():
    name = "http://h[/]x[@click=app.quit]y[bold red]z:1"
    busy = AskReason(AskKind.BUSY, 3, "[/b]")  # a route with markup in it: shown literally
    app = _Host(ConfirmFlush(name, (busy,)))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(words(app.screen.query_one("#flush-question"))))
        text = words(app.screen.query_one("#flush-question"))
        assert name in text
        assert "[/b]" in text
        top = drawn(app.screen.query_one("Vertical")).splitlines()[0]
        assert f"flush {name}?" in top  # the border title
        await pilot.press("enter")  # the focused answer is Cancel: Enter never flushes
        await pilot.pause()
    assert app.answers == [False]
