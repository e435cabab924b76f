"""Identity against real reference servers (issue 28): weights perturbed 1% in a folder of the
same name are another model (refused before anything is flushed), an unchanged copy is verified
as the same weights, and one server under two URLs is refused rather than compared with
itself."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator

import pytest

from kltui.cli.commands import main
from kltui.engines import weights
from kltui.errors import UsageError
from kltui.outputs.headless import pair_lines
from kltui.readings.cross_server import PairKind, cross_server
from kltui.readings.identity import CheckBasis, ConflictKind, ModelState
from kltui.reference import CHECKPOINT_DIR
from kltui.run.refusal import Refusal, refusal
from kltui.session.events import HelperStarted
from tests.integration.checkrun import check_run, recorded
from tests.unit.readings.test_same_weights import perturb


def shown(tmp_path, text: str) -> bool:
    """The console says the pair's reading and its model check (words: tests/unit/words)."""
    store = recorded(tmp_path)
    (pair,) = cross_server(store)
    return all(line.plain in text for line in pair_lines(pair, store))


SMALL = dict(samples=3, max_new_tokens=8, max_prompt_tokens=48, helpers=["match"])


@pytest.fixture(autouse=True)
def _own_weights_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    weights.forget()


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory, reference_servers):
    """A server of the shipped checkpoint's weights scaled by 1.01, in a folder of the same
    name (`checkpoint`): only the bytes tell it from the shipped one."""
    dst = tmp_path_factory.mktemp("perturbed") / CHECKPOINT_DIR.name
    shutil.copytree(CHECKPOINT_DIR, dst)
    perturb(dst)
    srv = reference_servers.own(deterministic=True, checkpoint=dst)
    yield srv.url
    srv.stop()


@pytest.fixture(scope="module")
def copied(tmp_path_factory, reference_servers):
    """A server of an unchanged copy of the shipped checkpoint, in a folder of the same name."""
    dst = tmp_path_factory.mktemp("copied") / CHECKPOINT_DIR.name
    shutil.copytree(CHECKPOINT_DIR, dst)
    srv = reference_servers.own(deterministic=True, checkpoint=dst)
    yield srv.url
    srv.stop()


async def test_perturbed_weights_in_a_folder_of_the_same_name_are_refused(
    reference_servers, perturbed, tmp_path
):
    a = reference_servers.url(deterministic=True)
    with pytest.raises(UsageError, match="serves another model") as e:
        await check_run([a, perturbed], tmp_path, record="r.kltui.jsonl", **SMALL)
    msg, found = str(e.value), e.value.finding
    assert isinstance(found, Refusal)
    c = found.conflict
    assert "\n" not in msg and "--allow-different-models" in msg
    # the local hashes of config.json and *.safetensors differ (words: tests/unit/words)
    assert c.kind is ConflictKind.DIFFERENT_MODEL and (c.a, c.b) == (a, perturbed)
    assert c.check is not None and c.check.basis is CheckBasis.LOCAL_HASH
    assert c.check.state is ModelState.DIFFERENT and c.check.a != c.check.b
    assert msg == refusal(c, found.fix)
    lines = (tmp_path / "r.kltui.jsonl").read_text().splitlines()
    assert not any(HelperStarted.__name__ in line for line in lines)


def test_perturbed_weights_exit_2_from_the_cli(reference_servers, perturbed, capsys):
    a = reference_servers.url(deterministic=True)
    argv = ["check", "--server", a, "--server", perturbed, "--no-record", "--samples", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kltui: error: ") and "serves another model" in err
    assert len(err.splitlines()) == 1


async def test_perturbed_weights_compared_anyway_read_as_different_models(
    reference_servers, perturbed, tmp_path
):
    a = reference_servers.url(deterministic=True)
    _, res, text = await check_run(
        [a, perturbed], tmp_path, width=400, allow_different_models=True, **SMALL
    )
    (pair,) = res["cross_server"]
    assert pair["same_model"] is False
    assert pair["kind"] == PairKind.DIFFERENT_MODELS  # compared anyway, and read as such
    assert pair["model_check"]["state"] == "different"
    assert "sha256" in pair["model_check"]["why"]  # the weights' hashes tell them apart
    assert shown(tmp_path, text)
    for s in res["servers"]:
        assert s["local_weights_sha256"] and s["local_weights_note"] is None


async def test_an_unchanged_copy_is_verified_as_the_same_weights(
    reference_servers, copied, tmp_path
):
    a = reference_servers.url(deterministic=True)
    _, res, text = await check_run([a, copied], tmp_path, width=400, **SMALL)
    (pair,) = res["cross_server"]
    assert pair["same_model"] is True
    assert pair["model_check"]["state"] == "same" and shown(tmp_path, text)
    first, second = res["servers"]
    assert first["local_weights_sha256"] == second["local_weights_sha256"]
    assert first["port"] == int(a.rsplit(":", 1)[1])


# ------------------------------------------------------------------ one server, two URLs
@contextlib.asynccontextmanager
async def tcp_proxy(target_port: int) -> AsyncIterator[str]:
    """A loopback port that forwards every connection to `target_port`: a second URL for the
    same server, as an SSH tunnel or a port forward gives one."""

    async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        except ConnectionError:
            pass  # either side hung up: the other is closed below
        finally:
            w.close()

    handlers: set[asyncio.Task] = set()
    writers: list[asyncio.StreamWriter] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if (task := asyncio.current_task()) is not None:
            handlers.add(task)
        writers.append(w)
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            w.close()
            return
        writers.append(uw)
        await asyncio.gather(pipe(r, uw), pipe(ur, w))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        # kept-alive connections end by EOF: a cancelled handler is logged as an error
        for w in writers:
            w.close()
        await asyncio.gather(*handlers, return_exceptions=True)


async def test_the_same_server_under_two_urls_is_refused(reference_servers, tmp_path):
    srv = reference_servers.server(deterministic=True)
    async with tcp_proxy(srv.port) as other_url:
        with pytest.raises(UsageError) as e:
            await check_run([srv.url, other_url], tmp_path, record="r.kltui.jsonl", **SMALL)
    msg, found = str(e.value), e.value.finding
    assert isinstance(found, Refusal)
    c = found.conflict
    assert "\n" not in msg
    # the same startup_time and port (words: tests/unit/words/test_identity_words.py)
    assert c.kind is ConflictKind.SAME_PROCESS and (c.a, c.b) == (srv.url, other_url)
    assert c.port == srv.port and c.startup_time is not None
    assert found.fix == "name each server once" and msg == refusal(c, found.fix)
    lines = (tmp_path / "r.kltui.jsonl").read_text().splitlines()
    assert not any(HelperStarted.__name__ in line for line in lines)
