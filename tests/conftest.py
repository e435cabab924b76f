"""Shared by every test tier: the servers tests run against (one reference-server factory, one
hostile-server factory: tests/servers.py), and each `--json` document written in-process goes
through `kltui.session.jsonfile.write_json_document`, validated here against the schema it names
(tests/json_contract.py) before it is written."""

from __future__ import annotations

import os

# numpy's AVX-512 float64 exp differs from libm's in the last bit on ~5% of inputs, and k3 of
# rounding-level r (exp(r) - 1 - r ~ 1e-12) carries that bit into the third digit the screens
# show: the stored snapshots then depend on the CPU that renders them. The tests run numpy on
# the dispatch every x86-64 machine has (names of numpy >= 2.4 and of older releases; an unknown
# name is ignored). Set before the imports below, which are the first to load numpy.
os.environ.setdefault(
    "NPY_DISABLE_CPU_FEATURES",
    "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL X86_V4 AVX512_ICL "
    "AVX512_SPR",
)

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from kltui.engines.http import HttpEngine  # noqa: E402
from tests.hostile.server import HostileServer  # noqa: E402
from tests.json_contract import validate  # noqa: E402
from tests.servers import ReferenceServers  # noqa: E402

# Recordings of runs that name no folder go to one of this process's own (each pytest-xdist
# worker is a process), never to the user's runs folder nor to another worker's, whose listings
# and pruning tests would see them.
_RUNS = tempfile.mkdtemp(prefix=f"kltui-test-runs-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
os.environ["KLTUI_RUNS_DIR"] = _RUNS
atexit.register(shutil.rmtree, _RUNS, ignore_errors=True)

TESTS = Path(__file__).parent
# the tiers whose modules share module-scoped fixtures that start servers or run sweeps: under
# pytest-xdist (`--dist loadgroup`, README's command) each such module runs on one worker, so
# that its fixtures are built once; unit, TUI and report tests spread one test at a time, and
# tests/real groups itself (one worker, one server per engine)
BY_MODULE = ("integration", "hostile", "reference", "web", "rl")


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (README's command): one worker per core, and one more. The server-backed tiers
    wait on servers and subprocesses: measured on the 2-core machine (2026-12-05), tests/
    integration with 2 workers left 23 % of the CPU idle and took 215 s; with 3, 7 % idle and
    176 s. `--maxprocesses` still caps it."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
        if parts and parts[0] in BY_MODULE:
            item.add_marker(pytest.mark.xdist_group("/".join(parts)))


@pytest.fixture(scope="session")
def reference_servers():
    """The session's reference servers: `reference_servers.url(deterministic=True)` is the
    shared server of that configuration (ReferenceServer's keyword arguments), started on
    first use; `reference_servers.own(...)` a private one the test may stop."""
    pool = ReferenceServers()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def hostile():
    """Factory: `srv = hostile(fault="reset-mid-stream", phase="decode")` starts a hostile
    server (tests/hostile/server.py) that is stopped when the test ends."""
    started: list[HostileServer] = []

    def make(**kw) -> HostileServer:
        srv = HostileServer(**kw).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture
def fast_backoff(monkeypatch):
    """In-process runs count retries; waiting the real backoff would only slow the suite (the
    hostile tier's subprocess tests run with the real delays, and one of them checks them)."""
    monkeypatch.setattr(HttpEngine, "retry_base_delay", 0.01)


@pytest.fixture(autouse=True)
def _json_documents_follow_their_schema(monkeypatch):
    from kltui.session import jsonfile
    from kltui.session.codec import tag_floats

    original = jsonfile.write_json_document

    def checked(path, doc, schema):
        validate(tag_floats(doc), schema)
        return original(path, doc, schema)

    monkeypatch.setattr(jsonfile, "write_json_document", checked)
