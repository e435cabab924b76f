"""`kltui ablate` refuses what `kltui check` refuses, and reads a starved cache as "not tested"
(issue 42's audit cases), on real reference servers:
- attach mode across different weights (perturbed 1% in a folder of the same name): exit 2,
  both hashes named, nothing flushed or measured;
- the same server under two URLs (a pass-through proxy): exit 2;
- a knob that starves the radix cache (`--max-total-tokens=80`): the cache helpers' hits are a
  token or two where the base's were tens, so that configuration's cache helpers are "not
  tested", never "reduced" or "removed".
"""

from __future__ import annotations

import asyncio
import shutil
import sys

import pytest

from kltui.cli.commands import main
from kltui.engines import weights
from kltui.reference import CHECKPOINT_DIR
from tests.integration.test_ablate import SIZES, ablate
from tests.integration.test_server_identity import tcp_proxy
from tests.json_contract import read_json
from tests.unit.readings.test_same_weights import perturb

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

REFERENCE = f"{sys.executable} -m kltui.reference serve"


@pytest.fixture(autouse=True)
def _own_weights_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    weights.forget()


def test_attach_mode_across_different_weights_is_refused_naming_both_hashes(
    reference_servers, tmp_path, capsys
):
    dst = tmp_path / "perturbed" / CHECKPOINT_DIR.name
    shutil.copytree(CHECKPOINT_DIR, dst)
    perturb(dst)
    other = reference_servers.own(page_size=4, checkpoint=dst)
    base = reference_servers.url()
    code, folder = ablate(tmp_path, "--server", base, "--server", other.url, "--headless")
    err = capsys.readouterr().err.strip()
    other.stop()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"kltui: error: {other.url} serves another model than {base} (")
    assert "config.json and *.safetensors differ" in err
    hashes = err.split("sha256 ", 1)[1].split(")", 1)[0]
    a, b = hashes.split(" vs ")
    assert a.endswith("…") and b.endswith("…") and a != b
    assert not folder.exists()  # refused before anything was flushed or recorded


async def test_attach_mode_on_one_server_under_two_urls_is_refused(
    reference_servers, tmp_path, capsys
):
    srv = reference_servers.server()
    async with tcp_proxy(srv.port) as other_url:
        argv = ["ablate", "--server", srv.url, "--server", other_url, "--headless", *SIZES]
        code = await asyncio.to_thread(main, [*argv, "--folder", str(tmp_path / "sweep")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"kltui: error: {srv.url} and {other_url} are the same server (")
    assert f"port {srv.port}" in err and "startup_time" in err
    assert not (tmp_path / "sweep").exists()


def test_a_knob_that_starves_the_cache_leaves_its_cache_helpers_not_tested(tmp_path, capsys):
    code, folder = ablate(
        tmp_path,
        "--launch",
        f"{REFERENCE} --enable-deterministic-inference --fault stale-prefix",
        "--vary",
        "--max-total-tokens=80",
        "--json",
        str(tmp_path / "s.json"),
    )
    capsys.readouterr()
    doc = read_json(tmp_path / "s.json", "ablation")
    base, starved = doc["ablation"]["configs"]
    assert base["condition"] == 2, base["diagnosis"]
    hit = starved["helpers"]["prefill_cache_hit"]
    assert hit["effect"] == "not tested", hit["line"]
    assert hit["untested_kind"] == "starved" and hit["scored"] > 0, hit["untested"]
    assert all(r["effect"] not in ("removed", "reduced") for r in starved["helpers"].values())
    v = doc["ablation"]["verdict"]
    assert v["kind"] not in ("localized", "reduced"), v["line"]
    # a knob that only left a helper the base tested untested is a trap, one per helper
    turned_off = [
        h
        for h, r in starved["helpers"].items()
        if r["effect"] == "not tested" and base["helpers"][h]["untested"] is None
    ]
    assert "prefill_cache_hit" in turned_off and starved["trap_kind"] is None
    assert len(v["traps"]) == len(turned_off), v["traps"]
    assert code == doc["exit_code"]
