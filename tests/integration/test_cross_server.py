"""The cross-server comparison against real reference servers: `identical` claims nothing a
helper left uncompared, the reading follows from which helpers differ, and servers of
different models are refused before anything runs."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from kltui.cli.commands import main
from kltui.errors import UsageError
from kltui.outputs.headless import pair_lines
from kltui.outputs.reports.html import html_report
from kltui.outputs.reports.md import md_report
from kltui.readings.cross_server import (
    MissingKind,
    PairKind,
    ServerPair,
    SuspectKind,
    cross_server,
)
from kltui.reference import CHECKPOINT_DIR
from kltui.run import driver
from kltui.run.config import RunConfig, load_config_file
from kltui.session.events import HelperFinished, HelperStarted
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.tui.screens.compare import pair_group
from kltui.untrusted import html_text as esc
from kltui.untrusted import md_text
from kltui.words.cross_server import reading_line
from tests.integration.checkrun import check_run

SMALL = dict(samples=8, max_new_tokens=32, max_prompt_tokens=64)
CACHE_HELPERS = ("prefill_cache_hit", "decode_cache_hit")


async def check(urls: list[str], tmp_path: Path, **cfg) -> tuple[int, dict, str]:
    return await check_run(urls, tmp_path, width=400, record="r.kltui.jsonl", **{**SMALL, **cfg})


def recorded_pair(tmp_path: Path) -> ServerPair:
    """The one server pair of the recorded run."""
    (pair,) = cross_server(fold(read_recording(str(tmp_path / "r.kltui.jsonl")))[-1])
    return pair


def views(tmp_path: Path) -> tuple[str, str, str]:
    """The MD, HTML and TUI (compare screen) renderings of the recorded run."""
    store = fold(read_recording(str(tmp_path / "r.kltui.jsonl")))[-1]
    (pair,) = cross_server(store)
    buf = io.StringIO()
    Console(file=buf, width=400).print(pair_group(pair, {}))
    return md_report(store), html_report(store), buf.getvalue()


async def test_radix_off_server_leaves_cache_helpers_uncompared(reference_servers, tmp_path):
    a = reference_servers.url(deterministic=True, fault="stale-prefix")
    b = reference_servers.url(deterministic=True, fault="stale-prefix", disable_radix_cache=True)
    _, res, text = await check([a, b], tmp_path)
    (pair,) = res["cross_server"]
    assert pair["identical"] is None, pair["reading"]
    # match identical, the cache paths said vacuous on B: identical where compared, no more
    assert pair["kind"] == PairKind.PARTLY_IDENTICAL and pair["suspects"] == []
    assert pair["helpers"]["match"]["identical"] is True
    for h in CACHE_HELPERS:
        assert pair["missing"][h] == [{"kind": MissingKind.SAID, "side": "B"}]
        why = pair["uncompared"][h]
        assert "disable_radix_cache=true" in why  # the helper's own reason, recorded
        assert f"  · {h}: not compared: {why}" in text
    md, html, tui = views(tmp_path)
    assert reading_line(recorded_pair(tmp_path)) == pair["reading"]
    for h in CACHE_HELPERS:  # each view says the same why, from the same words
        why = pair["uncompared"][h]
        assert f"{md_text(h)} not compared: {md_text(why)}" in md
        assert f"<code>{h}</code> not compared: {esc(why)}" in html
        assert f"{h}: not compared: {why}" in " ".join(tui.split())


async def test_server_dying_after_match_leaves_the_rest_uncompared(
    reference_servers, tmp_path, monkeypatch
):
    a = reference_servers.url(deterministic=True)
    srv = reference_servers.own(deterministic=True)  # killed below, so not a shared one
    b = srv.url
    real = driver.run_session

    async def kill_b_after_match(cfg, *args, **kw):
        async for ev in real(cfg, *args, **kw):
            yield ev
            if isinstance(ev, HelperFinished) and (ev.helper, ev.server) == ("match", b):
                srv.stop()

    monkeypatch.setattr(driver, "run_session", kill_b_after_match)
    try:
        rc, res, text = await check([a, b], tmp_path)
    finally:
        srv.stop()
    assert rc == 3, text
    (pair,) = res["cross_server"]
    assert pair["identical"] is None and pair["kind"] == PairKind.PARTLY_IDENTICAL
    assert pair["helpers"]["match"]["identical"] is True
    missing = {h: [m["kind"] for m in ms] for h, ms in pair["missing"].items()}
    assert missing == {
        "prefill_cache_hit": [MissingKind.ERRORED_IN],
        "decode_cache_hit": [MissingKind.ERRORED_BEFORE],
    }
    assert {m["side"] for ms in pair["missing"].values() for m in ms} == {"B"}
    for h, why in pair["uncompared"].items():
        assert f"{h}: not compared: {why}" in text


async def test_cache_helper_differing_with_match_identical_names_the_state_bug(
    reference_servers, tmp_path
):
    a = reference_servers.url(deterministic=True)
    b = reference_servers.url(deterministic=True, fault="stale-prefix")
    _, res, text = await check([a, b], tmp_path, helpers=["match", "prefill_cache_hit"])
    (pair,) = res["cross_server"]
    reading = pair["reading"]
    # match bit-identical, so not the kernels: a state bug on B's prefix restore
    assert pair["kind"] == PairKind.CACHE_PATH
    assert pair["suspects"] == [
        {"helper": "prefill_cache_hit", "kind": SuspectKind.ONE_SERVER, "server": "B"}
    ]
    assert pair["identical"] is False and pair["uncompared"] == {}
    assert pair["helpers"]["match"]["identical"] is True
    assert pair["helpers"]["prefill_cache_hit"]["identical"] is False
    assert reading_line(recorded_pair(tmp_path)) == reading
    assert all(line.plain in text for line in pair_lines(recorded_pair(tmp_path)))


async def test_a_page_size_difference_at_rounding_level_is_no_state_bug(
    reference_servers, tmp_path
):
    # default kernels, page size 1 against 4: the cache paths restore other page-rounded
    # prefixes, so their decode side differs by ulps (avg_kl_div ~1e-12 on each server, 1000x
    # below the 1e-9 floor) while match is bit-identical (issue 28)
    a = reference_servers.url(deterministic=False)
    b = reference_servers.url(deterministic=False, page_size=4)
    _, res, text = await check([a, b], tmp_path)
    (pair,) = res["cross_server"]
    reading = pair["reading"]
    assert pair["helpers"]["match"]["identical"] is True, reading
    differing = [h for h in CACHE_HELPERS if pair["helpers"][h]["identical"] is False]
    assert differing, reading  # the bits differ between page sizes, and that stays said
    for h in differing:
        assert all(v is not None and v <= 1e-9 for v in pair["helpers"][h]["avg_kl_div"])
    # each differing cache path at rounding level, none a state bug
    assert pair["kind"] == PairKind.CACHE_PATH
    assert pair["suspects"] == [
        {"helper": h, "kind": SuspectKind.ROUNDING, "server": None} for h in differing
    ]
    assert reading_line(recorded_pair(tmp_path)) == reading
    assert all(line.plain in text for line in pair_lines(recorded_pair(tmp_path)))


@pytest.fixture(scope="module")
def other_model(tmp_path_factory, reference_servers):
    """The shipped checkpoint under another name: a server reporting another model_path."""
    dst = tmp_path_factory.mktemp("models") / "other-model"
    shutil.copytree(CHECKPOINT_DIR, dst)
    srv = reference_servers.own(deterministic=True, checkpoint=dst)  # this module's alone
    yield srv.url
    srv.stop()


async def test_different_models_are_refused_before_any_helper(
    reference_servers, other_model, tmp_path
):
    a = reference_servers.url(deterministic=True)
    with pytest.raises(UsageError, match="serves another model") as e:
        await check([a, other_model], tmp_path)
    assert "--allow-different-models" in str(e.value) and "\n" not in str(e.value)
    lines = (tmp_path / "r.kltui.jsonl").read_text().splitlines()
    assert not any(HelperStarted.__name__ in line for line in lines)


def test_different_models_exit_2_from_the_cli(reference_servers, other_model, tmp_path, capsys):
    a = reference_servers.url(deterministic=True)
    argv = ["check", "--server", a, "--server", other_model, "--no-record", "--samples", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kltui: error: ") and "serves another model" in err
    assert len(err.splitlines()) == 1


async def test_allow_different_models_compares_and_says_so(
    reference_servers, other_model, tmp_path
):
    a = reference_servers.url(deterministic=True)
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("allow_different_models: true\n")
    assert load_config_file(str(cfg_file), RunConfig()).allow_different_models is True
    _, res, text = await check(
        [a, other_model], tmp_path, helpers=["match"], allow_different_models=True
    )
    (pair,) = res["cross_server"]
    assert pair["same_model"] is False
    assert pair["kind"] == PairKind.DIFFERENT_MODELS  # compared, and said to be so
    assert pair["model_check"]["state"] == "different"
    assert "model_path" in pair["model_check"]["why"]
    assert reading_line(recorded_pair(tmp_path)) == pair["reading"]
