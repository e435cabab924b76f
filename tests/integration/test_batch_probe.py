"""`kltui check --batch-sizes` against a real reference server (issue 32): a kernel that switches
above a batch size is found at the first size past it, named per helper, and a batch-invariant
server is bit-identical at every size."""

from __future__ import annotations

import asyncio

from kltui.readings.batch_sizes import BatchKind, findings
from kltui.words.batch_sizes import probe_lines
from tests.integration.checkrun import check_run, recorded


def shown(tmp_path, text: str) -> bool:
    """The console says each probe's words (tests/unit/words holds them)."""
    lines = probe_lines(recorded(tmp_path))
    return bool(lines) and all(line in " ".join(text.split()) for line in lines)


SMALL = {"samples": 4, "max_new_tokens": 8, "helpers": ["match"], "batch_sizes": [1, 2, 4]}


def test_batch_switch_is_found_at_its_size(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, fault="batch-switch:2", random_seed=0)
    _, doc, text = asyncio.run(check_run(url, tmp_path, **SMALL))
    (probe,) = doc["batch_probe"]
    assert probe["helper"] == "match" and probe["sizes"] == [1, 2, 4]
    assert probe["changed_at"] == 4 and probe["samples"] == 4 and probe["error"] is None
    (found,) = findings(recorded(tmp_path))  # deterministic server: a gap above batch 2
    assert (found.kind, found.below) == (BatchKind.GAP, 2)
    assert shown(tmp_path, text)


def test_a_batch_invariant_server_never_changes(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, random_seed=0)
    rc, doc, text = asyncio.run(check_run(url, tmp_path, **SMALL))
    (probe,) = doc["batch_probe"]
    assert rc == 0 and probe["changed_at"] is None and probe["first"] is None
    (found,) = findings(recorded(tmp_path))
    assert found.kind == BatchKind.IDENTICAL and shown(tmp_path, text)


def test_a_size_above_the_prompts_is_named_not_reached_never_called_tested(
    reference_servers, tmp_path
):
    # a kernel switch above 6 running requests, probed at 1,8,32 with 4 prompts: a batch of 8
    # or 32 never ran, so "bit-identical at every batch size" would claim what was not measured
    url = reference_servers.url(deterministic=True, fault="batch-switch:6", random_seed=0)
    rc, doc, text = asyncio.run(check_run(url, tmp_path, **{**SMALL, "batch_sizes": [1, 8, 32]}))
    (probe,) = doc["batch_probe"]
    assert probe["sizes"] == [1, 4] and probe["not_reached"] == [8, 32]
    assert probe["changed_at"] is None
    (found,) = findings(recorded(tmp_path))  # identical at the sizes run, the rest named
    assert found.kind == BatchKind.IDENTICAL and list(found.ev.not_reached) == [8, 32]
    assert shown(tmp_path, text)
    # the one size asked for beyond the prompts: run at 4 in its place, and found there
    url2 = reference_servers.url(deterministic=True, fault="batch-switch:2", random_seed=0)
    _, doc, text = asyncio.run(check_run(url2, tmp_path, **{**SMALL, "batch_sizes": [1, 8]}))
    (probe,) = doc["batch_probe"]
    assert probe["sizes"] == [1, 4] and probe["not_reached"] == [8] and probe["changed_at"] == 4
    (found,) = findings(recorded(tmp_path))
    assert (found.kind, found.below) == (BatchKind.GAP, 1) and shown(tmp_path, text)
