"""`kltui import FILE --server URL`: the shown samples re-scored on a live server (the
reference server, real HTTP): a teacher-forced prefill gives the third number per token, and
the match helper runs on the file's prompts; a server that does not answer is one line, exit 3."""

from __future__ import annotations

import json
import socket

import pytest

from kltui.cli import main
from kltui.readings.imported import RescoreKind, rescored
from kltui.words.rl import rescore_lines
from tests.rl.files import header, record, write_jsonl
from tests.rl.reference_pairs import reference_pairs


@pytest.fixture(scope="module")
def url(reference_servers):
    return reference_servers.url(deterministic=True)


def planted(tmp_path, url):
    recs = []
    for i, p in enumerate(reference_pairs(url)):
        trainer = list(p["trainer"])
        if i == 2:
            trainer[5] -= 0.2  # the trainer is off at one token; the rollout is the server's
        recs.append(record(p["prompt"], p["ids"], p["rollout"], trainer, id=i))
    return write_jsonl(tmp_path / "r.jsonl", recs, first=header())


def test_three_numbers_per_token_and_the_match_helper(tmp_path, capsys, url):
    out = tmp_path / "r.json"
    code = main(["import", str(planted(tmp_path, url)), "--server", url, "--json", str(out)])
    printed, _ = capsys.readouterr()
    assert code == 0, printed
    doc = json.loads(out.read_text())
    got = {r["helper"]: r for r in doc["rescored"]}
    assert set(got) == {"server_vs_rollout", "trainer_vs_server", "match"}
    assert got["server_vs_rollout"]["samples_with_difference"] == 0
    assert got["trainer_vs_server"]["samples_with_difference"] == 1
    assert got["trainer_vs_server"]["first_divergence"] == {"sample": 2, "position": 5}
    assert got["match"]["scored"] == 6 and got["match"]["samples_with_difference"] == 0
    # the prefill reproduces the rollout: the trainer is the side that differs, decode is exact
    found = rescored(got["server_vs_rollout"], got["trainer_vs_server"], got["match"])
    assert (found.kind, found.scored, found.trainer_differ) == (RescoreKind.TRAINER, 6, 1)
    assert found.match_differ == 0
    lines = rescore_lines(found)  # golden: tests/unit/words/test_golden_rl.py
    assert len(lines) == 2 and all(f"server now: {line}\n" in printed for line in lines)
    # issue 59: with --server given, no "kltui import FILE --server URL" to run next
    assert "--server URL" not in printed and doc["reading"]["next_command"] is None
    assert doc["reading"]["next_step"].startswith("the re-scoring on the server")
    # the three-column row of the planted token: trainer, rollout as recorded, server now
    row = next(ln for ln in printed.splitlines() if ln.strip().startswith("│") and " 2 │" in ln)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    trainer, rollout, server = map(float, cells[3:6])
    assert rollout == server and trainer == pytest.approx(rollout - 0.2, abs=1e-6)


def test_a_server_that_does_not_answer_is_one_line_and_exit_3(tmp_path, capsys, url):
    path = planted(tmp_path, url)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    code = main(["import", str(path), "--server", dead])
    printed, _ = capsys.readouterr()
    assert code == 3
    lines = [ln for ln in printed.splitlines() if dead in ln and "--server" in ln]
    assert len(lines) == 1, printed
    # the file's own figures are still there
    assert "gate avg_kl_div<0.002" in printed
