"""The bad-input catalogue of `kltui import`: each case is one line naming the file, the record
number and the field, never a traceback; the records around a bad one are still measured
(nothing lost), and the exit code is 2 (bad input)."""

from __future__ import annotations

import json

import pytest

from kltui.cli import main
from tests.rl.files import header, record, write_jsonl

GOOD = [record([1, 2], [5, 6, 7], [-0.5, -0.25, -1.0], [-0.5, -0.3, -1.0]) for _ in range(4)]


def run(capsys, *argv):
    code = main(["import", *map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def import_json(tmp_path, capsys, path):
    out = tmp_path / "out.json"
    code, stdout, _ = run(capsys, path, "--json", out)
    return code, stdout, json.loads(out.read_text())


def one_line(text: str, needle: str) -> str:
    lines = [ln for ln in text.splitlines() if needle in ln]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    "bad, field, words",
    [
        (
            record([1], [5, 6, 7], [-0.5, -0.25], [-0.5, -0.3, -1.0]),
            "rollout_logprobs",
            "has 2 logprobs for 3 response_ids",
        ),
        (
            record([1], [5, 6], [-0.5, float("nan")], [-0.5, -0.3]),
            "rollout_logprobs",
            "NaN or infinite (first at position 1: nan)",  # was np.float64(nan) (issue 46)
        ),
        (
            {**record([1], [5, 6], [-0.5, -0.2], [-0.5, -0.3]), "trainer_logprobs": [-0.5, None]},
            "trainer_logprobs",
            "NaN or infinite (first at position 1: nan)",
        ),
        (
            record([1], [5, 6], [-0.5, -0.2], [-0.5, 0.25]),
            "trainer_logprobs",
            "above 0, which no probability gives (first at position 1: +0.25)",
        ),
        (
            record([1], [5, 6], [-0.5, -0.2], [-0.5, -0.3], mask=[0, 0]),
            "loss_mask",
            "covers none of the 2 tokens",
        ),
        (
            record([1], [5, 6], [-0.5, -0.2], [-0.5, -0.3], mask=[1]),
            "loss_mask",
            "has 1 entries for 2 response_ids",
        ),
    ],
)
def test_a_bad_record_is_one_line_and_the_rest_is_measured(tmp_path, capsys, bad, field, words):
    path = write_jsonl(tmp_path / "f.jsonl", [GOOD[0], GOOD[1], bad, GOOD[2]], first=header())
    code, out, doc = import_json(tmp_path, capsys, path)
    assert code == 2
    line = one_line(out, field)
    assert line.startswith(f"{path}: record 3 (line 4): {field}: ")
    assert words in line
    rl = doc
    assert (rl["records"], rl["usable"], rl["bad_records"]) == (4, 3, 1)
    assert rl["bad"] == [line]
    assert doc["k3"]["tokens"] == 9  # the three good records, every token


def test_a_truncated_file_keeps_every_complete_record(tmp_path, capsys):
    path = write_jsonl(
        tmp_path / "cut.jsonl",
        [*GOOD, b'{"prompt_ids": [1, 2], "response_ids": [5, 6'],
        first=header(),
    )
    code, out, doc = import_json(tmp_path, capsys, path)
    assert code == 2
    line = one_line(out, ": truncated:")
    assert line == f"{path}: record 5 (line 6): (record): truncated: the file ends inside it"
    assert doc["usable"] == 4


def test_a_broken_line_inside_the_file_is_not_called_truncated(tmp_path, capsys):
    path = write_jsonl(tmp_path / "mid.jsonl", [GOOD[0], b"{not json\n", GOOD[1]], first=header())
    code, out, _ = run(capsys, path)
    assert code == 2
    assert "record 2 (line 3): (record): not valid JSON" in one_line(out, "not valid JSON")


@pytest.mark.parametrize(
    "first, words",
    [
        (header(version=2), "header: version: schema version 2 is not known to this kltui"),
        (header(version="1"), "header: version: must be an integer schema version"),
        ({"format": "something-else", "version": 1}, "format 'something-else' is not 'kltui-rl'"),
        (None, "has no header line"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path, capsys, first, words):
    path = write_jsonl(tmp_path / "v.jsonl", GOOD, first=first)
    code, out, err = run(capsys, path)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"kltui: error: {path}")
    assert words in err


def test_a_missing_file_and_an_empty_one(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "nope.jsonl")
    assert code == 2 and "nope.jsonl: cannot be read" in err
    (tmp_path / "empty.jsonl").write_bytes(b"")
    code, _, err = run(capsys, tmp_path / "empty.jsonl")
    assert code == 2 and "is empty" in err


def test_a_truncated_parquet_file_is_one_line(tmp_path, capsys):
    from tests.rl.files import write_parquet

    path = write_parquet(tmp_path / "f.parquet", GOOD)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    code, _, err = run(capsys, path)
    assert code == 2 and err.count("\n") == 1
    assert (
        "is not a readable Parquet file" in err and "truncated one has no readable records" in err
    )


def test_a_gate_on_an_unknown_metric_fails_before_reading(tmp_path, capsys):
    path = write_jsonl(tmp_path / "f.jsonl", GOOD, first=header())
    code, _, err = run(capsys, path, "--gate", "k4_kl<=1")
    assert code == 2 and "no metric 'k4_kl'" in err
    code, _, err = run(capsys, path, "--gate", "k3_kl=1")
    assert code == 2 and "write NAME<=VALUE" in err


def test_the_recording_of_an_import_reads_back_as_any_run(tmp_path, capsys):
    # the import is one event stream: recorded, it is reported and replayed as a run is
    path = write_jsonl(tmp_path / "f.jsonl", [*GOOD, b"{cut"], first=header())
    rec = tmp_path / "imp.kltui.jsonl"
    code, printed, _ = run(capsys, path, "--record", rec)
    assert code == 2
    assert main(["report", str(rec), "--md", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    assert "trainer\\_vs\\_rollout" in text and "truncated: the file ends inside it" in text
    assert "Imported file" in text and "4 of 5 records usable" in text
    assert main(["replay", "--headless", str(rec)]) == 1  # the recorded verdict: fail (invalid)
    capsys.readouterr()
