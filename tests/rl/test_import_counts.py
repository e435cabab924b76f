"""What an import says it read (issue 46): the record count on the console's first line and in
the reports' prompt-set line (a verl or slime JSONL file has no header line to leave out), and
every sample where trainer and rollout differ, not only the worst one, in the console and the
JSON."""

from __future__ import annotations

import json

import numpy as np

from kltui.cli import main
from kltui.rl.reading import LISTED_DIFFERING
from kltui.rl.scan import scan
from kltui.words.rl import differing_line
from tests.rl.files import header, record, verl_row, write_jsonl


def samples(n: int, planted: dict[int, float]) -> list[tuple]:
    """`n` samples whose trainer equals the rollout except in `planted` (sample -> offset).

    Each file draws from its own seeded generator (the order xdist runs a module's tests in must
    not change the data), and every rollout logprob sits below -0.5 so that no planted offset
    (<= 0.3) is clipped at 0: a larger offset is then a larger mean k3, and "worst first" is
    the planted order."""
    rng = np.random.default_rng(46 + n)
    out = []
    for i in range(n):
        roll = -0.5 - rng.exponential(1.0, 12)
        train = roll + planted.get(i, 0.0)
        out.append((rng.integers(1, 50, 4), rng.integers(0, 99, 12), roll, train))
    return out


def verl_file(path, n: int, planted: dict[int, float]):
    rows = [
        verl_row(p, ids, r, t, 16, 6, uid=f"u{i}")
        for i, (p, ids, r, t) in enumerate(samples(n, planted))
    ]
    return write_jsonl(path, rows)


def run_import(tmp_path, capsys, path) -> tuple[str, dict, str]:
    out, md = tmp_path / "out.json", tmp_path / "out.md"
    code = main(["import", str(path), "--json", str(out), "--md", str(md)])
    console, _ = capsys.readouterr()
    assert code == 1  # the planted offsets fail the gate
    return console, json.loads(out.read_text()), md.read_text()


def test_a_verl_jsonl_file_is_counted_to_its_last_record(tmp_path, capsys):
    path = verl_file(tmp_path / "verl.jsonl", 6, {2: 0.1, 4: 0.3, 5: 0.3})
    console, doc, md = run_import(tmp_path, capsys, path)
    assert console.splitlines()[0].endswith(", 6 records")
    assert doc["records"] == doc["usable"] == 6
    prompts = next(line for line in md.splitlines() if line.startswith("- **Prompts**"))
    assert "6 records" in prompts and "verl" in prompts
    assert "?" not in prompts.split("; sha256")[0] and "None" not in prompts


def test_the_count_leaves_out_a_header_line_and_blank_lines_only(tmp_path):
    recs = [record([1], [2, 3], [-0.5, -0.5], [-0.5, -0.5]) for _ in range(4)]
    kltui_rl = write_jsonl(tmp_path / "k.jsonl", recs, first=header())
    assert scan(str(kltui_rl), True, True)[0] == 4
    verl = verl_file(tmp_path / "v.jsonl", 5, {})
    assert scan(str(verl), True, False)[0] == 5
    gaps = tmp_path / "gaps.jsonl"
    lines = verl.read_bytes().splitlines(keepends=True)
    gaps.write_bytes(b"\n" + lines[0] + b"\n\n\n" + b"".join(lines[1:]).rstrip(b"\n") + b"\n\n")
    assert scan(str(gaps), True, False)[0] == 5
    no_newline = tmp_path / "last.jsonl"
    no_newline.write_bytes(verl.read_bytes().rstrip(b"\n"))
    assert scan(str(no_newline), True, False)[0] == 5


def test_every_differing_sample_is_named_not_only_the_worst(tmp_path, capsys):
    path = verl_file(tmp_path / "verl.jsonl", 6, {2: 0.1, 4: 0.3, 5: 0.2})
    console, doc, _ = run_import(tmp_path, capsys, path)
    listed = doc["differing_samples"]["listed"]
    assert doc["differing_samples"]["total"] == 3
    assert [d["sample"] for d in listed] == [4, 5, 2]  # worst first
    assert all(d["tokens_differ"] > 0 and d["first_position"] >= 0 for d in listed)
    line = next(x for x in console.splitlines() if "samples that differ" in x)
    assert line.index(" 4 (") < line.index(" 5 (") < line.index(" 2 (")


def test_past_the_listed_ones_the_rest_are_counted(tmp_path, capsys):
    planted = {i: 0.01 * (i + 1) for i in range(0, 24, 2)}  # 12 samples of 24
    console, doc, _ = run_import(tmp_path, capsys, verl_file(tmp_path / "v.jsonl", 24, planted))
    found = doc["differing_samples"]
    assert found["total"] == len(planted)
    assert [d["sample"] for d in found["listed"]] == sorted(planted, reverse=True)[
        :LISTED_DIFFERING
    ]
    assert f"  {differing_line(found)}\n" in console  # "and 4 more": test_golden_rl
