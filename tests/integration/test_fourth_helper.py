"""docs/ARCHITECTURE.md's "A new helper" recipe, followed once: `fourth_helper.py` plus one
registry entry, and nothing else of kltui touched. Against the reference server the helper runs
from `--helpers`, takes its threshold from its registry field, and appears in `check`'s JSON and
console and in the diagnosis, which reads its role (a cache path: condition 2)."""

from __future__ import annotations

import pytest

from kltui import registry
from tests.integration.checkrun import check_run
from tests.integration.fourth_helper import ENTRY, NAME

SMALL = dict(samples=8, max_new_tokens=16, max_prompt_tokens=64)


@pytest.fixture
def registered(monkeypatch):
    """The recipe's one registry entry."""
    monkeypatch.setitem(registry.HELPERS, NAME, ENTRY)


async def test_a_fourth_helper_runs_from_its_registry_entry(
    registered, reference_servers, tmp_path
):
    url = reference_servers.url(deterministic=True)
    rc, res, text = await check_run(url, tmp_path, helpers=["match", NAME], **SMALL)
    assert rc == 0, text
    h = res["helpers"][NAME]
    assert (h["status"], h["avg_kl_div"], h["threshold"]) == ("pass", 0.0, 1e-9)
    assert h["scored"] > 4 and h["scored"] + h["skipped"] == 8
    assert NAME in text  # the console's results table
    (d,) = res["diagnosis"]
    assert d["condition"] == 0
    assert any(line.startswith(f"{NAME}:") for line in d["evidence"]), d["evidence"]


async def test_the_diagnosis_reads_its_role(registered, reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True, fault="stale-prefix")
    rc, res, text = await check_run(url, tmp_path, helpers=["match", NAME], **SMALL)
    assert res["helpers"]["match"]["avg_kl_div"] == 0.0
    assert res["helpers"][NAME]["avg_kl_div"] > 0.0, text
    (d,) = res["diagnosis"]
    assert d["condition"] == 2, d
    assert ENTRY.path in d["label"]  # "the fault is in" the path of its registry entry
    assert f"--helpers match,{NAME}" in d["next_command"]
