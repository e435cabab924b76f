"""`kltui check --stress` against real reference servers (issue 32): a load-triggered fault the
quiet run misses is named by helper, sample, position, side and traffic; a non-deterministic
server gets the paired test and never a bug from noise; the recording replays the traffic."""

from __future__ import annotations

import asyncio

from kltui.readings.stress import is_stressed
from kltui.readings.stress import read as read_stress
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from kltui.words.stress import stress_json
from tests.integration.checkrun import check_run

SMALL = {"samples": 4, "max_new_tokens": 8, "stress": "light"}


def test_stale_prompt_logprobs_caught_only_under_stress(reference_servers, tmp_path):
    url = reference_servers.url(
        deterministic=True,
        fault="stale-prompt-logprobs",
        random_seed=0,
        extra_args=("--enable-metrics",),
    )
    rc, doc, text = asyncio.run(check_run(url, tmp_path, **SMALL))
    stress = doc["stress"]
    assert rc == 1 and stress["verdict"] == "state bug under load"
    bugs = [h for h in stress["helpers"] if h["verdict"] == "state bug under load"]
    assert bugs and all(h["first_difference"]["side"] == "prefill" for h in bugs)
    assert all(h["first_difference"]["position"] == 0 for h in bugs)
    assert any("shared" in (h["during"] or "") for h in bugs)
    (traffic,) = stress["traffic"].values()
    assert traffic["sent"] > 0 and traffic["by_kind"]["shared"] > 0
    assert stress["server_counts"][url]["retractions"] == 0  # no retraction asked
    assert "state bug under load" in text
    # the quiet run alone passes: the fault needs another request's prompt logprobs
    quiet = read_recording(str(tmp_path / "r.jsonl"))
    stores = []
    fold(quiet, stores.append)
    assert stores[0].finished.verdict == "pass" and not stores[0].stress
    # the recording of the stressed run carries the traffic, and reads the same again
    loud = []
    fold(read_recording(str(tmp_path / "r-2.jsonl")), loud.append)
    assert is_stressed(loud[0]) and loud[0].stress[0].moment == "start"
    again = read_stress(stores[0], loud[0])
    assert stress_json(again) == stress


def test_noise_is_never_called_a_state_bug(reference_servers, tmp_path):
    url = reference_servers.url(random_seed=0)  # ordinary batched kernels: batch noise
    rc, doc, _ = asyncio.run(check_run(url, tmp_path, **SMALL))
    stress = doc["stress"]
    assert stress["verdict"] != "state bug under load"
    for h in stress["helpers"]:
        assert h["first_difference"] is None and h["paired"] is not None
        # 4 samples cannot reach the paired test's evidence level: said, not guessed
        assert h["verdict"] == "inconclusive"
