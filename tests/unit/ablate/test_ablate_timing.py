"""`kltui ablate`'s time split when the sweep is interrupted (issue 44): the seconds a server
spent starting, or its helpers running, when Ctrl-C came are its start or run time, never
kltui's own (an interrupted sweep printed "kltui 18.86 s (3.42%)" where finished ones print
0.00 s). The servers and the helper run are stand-ins that wait until cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kltui.ablate.plan import Config
from kltui.ablate.sweep import INTERRUPTED, NOT_RUN
from kltui.run import ablate as sweep_mod
from kltui.run.config import RunConfig

WAIT_S = 0.6


class Server:
    """A server that starts in no time (`start_s` 0) or never (`hang`)."""

    def __init__(self, hang: bool) -> None:
        self.hang, self.startup_s = hang, 0.0

    async def start(self, progress=None) -> str:
        if self.hang:
            await asyncio.sleep(3600)
        return "http://127.0.0.1:9"

    def check_alive(self) -> None:
        pass

    async def stop(self) -> None:
        pass


class Driver:
    """A helper run that never ends."""

    stress_next = False

    def __init__(self, cfg, record=None) -> None:
        pass

    async def run(self, view):
        await asyncio.sleep(3600)


class View:
    def __getattr__(self, name):
        return lambda *a, **k: None


def _sweep(tmp_path: Path, monkeypatch, hang: bool):
    monkeypatch.setattr(sweep_mod, "_server", lambda spec, sweep, run: Server(hang))
    monkeypatch.setattr(sweep_mod, "RunDriver", Driver)
    spec = sweep_mod.SweepSpec(RunConfig(), tmp_path / "s", launch=("serve",), varies=("x=1",))
    configs = (Config("base", {}, ("serve",)), Config("tp=2", {"tp": "2"}, ("serve", "--tp", "2")))

    async def main():
        task = asyncio.ensure_future(sweep_mod.run_sweep(spec, View(), configs=configs))
        await asyncio.sleep(WAIT_S)
        task.cancel()
        return await task

    return asyncio.run(main())


@pytest.mark.parametrize(("hang", "part"), [(True, "start_s"), (False, "run_s")])
def test_an_interrupted_sweep_counts_its_cut_seconds_as_the_servers_not_kltuis(
    tmp_path, monkeypatch, hang, part
):
    sweep = _sweep(tmp_path, monkeypatch, hang)
    assert sweep.interrupted and sweep.base.status == (NOT_RUN if hang else INTERRUPTED)
    t = sweep.timing().to_json()
    assert t[part] >= WAIT_S * 0.9, t
    assert t["kltui_s"] < WAIT_S / 2, t
