"""`kltui check --batch-sizes` against a real reference server (issue 32): a kernel that switches
above a batch size is found at the first size past it, named per helper, and a batch-invariant
server is bit-identical at every size."""

from __future__ import annotations

import asyncio

from tests.integration.checkrun import check_run

SMALL = {"samples": 4, "max_new_tokens": 8, "helpers": ["match"], "batch_sizes": [1, 2, 4]}


def test_batch_switch_is_found_at_its_size(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, fault="batch-switch:2", random_seed=0)
    _, doc, text = asyncio.run(check_run(url, tmp_path, **SMALL))
    (probe,) = doc["batch_probe"]
    assert probe["helper"] == "match" and probe["sizes"] == [1, 2, 4]
    assert probe["changed_at"] == 4 and probe["samples"] == 4 and probe["error"] is None
    assert "batch-invariance gap" in text and "above batch 2" in text


def test_a_batch_invariant_server_never_changes(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, random_seed=0)
    rc, doc, text = asyncio.run(check_run(url, tmp_path, **SMALL))
    (probe,) = doc["batch_probe"]
    assert rc == 0 and probe["changed_at"] is None and probe["first"] is None
    assert "bit-identical at every batch size" in text
