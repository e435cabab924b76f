"""Fleets behind the real SGLang router (`sglang-router` from PyPI) in front of reference
servers: `--server ROUTER` is refused with the reason; `--router ROUTER` checks every worker by
its own URL and compares them."""

from __future__ import annotations

import pytest

from kltui.cli.commands import main
from kltui.errors import EXIT_USAGE
from tests.router import Router


@pytest.fixture(scope="module")
def two_workers(ref_servers):
    a = ref_servers.get(deterministic=True)
    b = ref_servers.get(deterministic=True, page_size=4)
    with Router([a, b]) as router:
        yield router


@pytest.mark.parametrize("command", ["check", "tui"])
def test_server_pointed_at_a_router_is_refused_with_the_reason(two_workers, capsys, command):
    rc = main([command, "--server", two_workers.url, "--samples", "2"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    (line,) = [ln for ln in err.splitlines() if ln.startswith("kltui: error:")]
    assert f"{two_workers.url} is an SGLang router (GET /workers lists 2 workers)" in line
    assert "broadcasts /flush_cache to every worker" in line
    assert "fresh prefill and decode) to different replicas" in line
    assert "cache-hit probes land on replicas that never saw the prefix" in line
    assert f"--router {two_workers.url}" in line


def test_router_flag_on_a_server_says_it_is_no_router(ref_servers, capsys):
    rc = main(["check", "--router", ref_servers.get(deterministic=True), "--samples", "2"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE
    assert "GET /workers answered no worker list, so this is not an SGLang router" in err
