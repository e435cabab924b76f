"""An import of the reference server's own logprobs (decode as the rollout, a fresh prefill as
the trainer) with offsets planted at known places: kltui finds exactly those, and its figures
are the owners' formulas on the planted values."""

from __future__ import annotations

import json
import math

import pytest

from kltui.cli import main
from kltui.cli.report import load_store
from kltui.readings.imported import ImportFinding, ImportKind, ImportLine
from kltui.untrusted import md_text
from kltui.words.rl import label, reading_words
from tests.rl.files import header, record, write_jsonl
from tests.rl.reference_pairs import reference_pairs

# (sample, position, offset added to the trainer's logprob)
PLANTED = [(1, 7, -0.05), (3, 2, -0.4), (3, 15, 0.0), (4, 20, -0.01)]


@pytest.fixture(scope="module")
def pairs(reference_servers):
    return reference_pairs(reference_servers.url(deterministic=True))


def planted_file(tmp_path, pairs):
    recs = []
    for i, p in enumerate(pairs):
        trainer = list(p["trainer"])
        for s, pos, off in PLANTED:
            if s == i:
                trainer[pos] = min(trainer[pos] + off, 0.0)
        recs.append(record(p["prompt"], p["ids"], p["rollout"], trainer, id=f"s{i}", step=1))
    return write_jsonl(
        tmp_path / "planted.jsonl", recs, first=header(model="kltui-tiny", engine="reference")
    )


def recorded_reading(rec) -> ImportFinding:
    """The reading the import's recording holds (its summary's `rl.reading`)."""
    store, _ = load_store(rec)
    (st,) = store.helpers.values()
    found = ImportFinding.from_json(st.summary.raw["rl"]["reading"])
    assert found is not None
    return found


def test_the_deterministic_server_agrees_with_itself(pairs):
    # the fixture's premise: without planted offsets both sides are bit-identical
    assert all(p["rollout"] == p["trainer"] for p in pairs)


def test_the_planted_offsets_are_found_where_they_were_planted(tmp_path, capsys, pairs):
    path = planted_file(tmp_path, pairs)
    out = tmp_path / "r.json"
    rec = tmp_path / "r.kltui.jsonl"
    code = main(
        ["import", str(path), "--json", str(out), "--gate", "mis_k3_kl<=1", "--record", str(rec)]
    )
    printed, _ = capsys.readouterr()
    doc = json.loads(out.read_text())
    assert code == 0, printed
    k3 = doc["k3"]
    real = [(s, pos, off) for s, pos, off in PLANTED if off != 0.0]
    assert k3["samples_with_difference"] == len({s for s, _, _ in real})
    # the earliest position over all samples, as every kltui helper reports it
    assert k3["first_divergence"] == {"sample": 3, "position": 2}
    assert (k3["max_k3_sample"], k3["max_k3_position"]) == (3, 2)
    # k3 of one planted token: d = offset, k3 = exp(d) - d - 1; verl's k3_kl is their sum over
    # every token of the file
    tokens = sum(len(p["ids"]) for p in pairs)
    want = sum(math.exp(off) - off - 1 for _, _, off in real) / (tokens + 1e-8)
    assert doc["verl"]["k3_kl"] == pytest.approx(want, rel=1e-9)
    assert doc["verl"]["kl"] == pytest.approx(
        -sum(off for *_, off in real) / (tokens + 1e-8), rel=1e-9
    )
    f = recorded_reading(rec)  # a mismatch in the 3 planted samples, the worst the largest offset
    assert (f.kind, f.differ, f.samples, f.worst_sample) == (ImportKind.MISMATCH, 3, 6, 3)
    assert (f.differ_tokens, f.first_earliest, f.catastrophic) == (len(real), 2, 0)
    assert ImportLine.NO_CONDITIONS in f.lines  # the file cannot tell condition 1 from 2
    assert doc["reading"] == reading_words(f.to_json())  # its words (golden: test_golden_rl)
    assert doc["by_step"][0]["step"] == 1 and doc["by_step"][0]["samples"] == 6


def test_a_failed_gate_exits_1_and_the_reports_say_why(tmp_path, capsys, pairs):
    path = planted_file(tmp_path, pairs)
    md, html, junit = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.xml"
    code = main(
        [
            "import",
            str(path),
            "--gate",
            "k3_kl<=1e-6",
            "--md",
            str(md),
            "--html",
            str(html),
            "--junit",
            str(junit),
            "--record",
            str(tmp_path / "r.kltui.jsonl"),
        ]
    )
    printed, _ = capsys.readouterr()
    assert code == 1
    assert "gate k3_kl<=1e-06:" in printed and "FAIL" in printed
    text = md.read_text()
    assert "| k3\\_kl |" in text and "- gate k3\\_kl" in text and "❌" in text
    f = recorded_reading(tmp_path / "r.kltui.jsonl")
    assert (f.kind, f.differ, f.samples) == (ImportKind.MISMATCH, 3, 6)
    assert md_text(label(f)) in text  # the diagnosis line
    page = html.read_text()
    assert "verl 0.9.1 rollout_corr/*" in page and "mis_rs_catastrophic_seq_fraction" in page
    assert "trainer_vs_rollout" in junit.read_text()


async def test_token_text_from_a_local_tokenizer(tmp_path, pairs):
    # --tokenizer: the drill-down shows each token's text (the reference checkpoint's tokenizer)
    from pathlib import Path

    import kltui.reference
    from kltui.rl.headless import run_import
    from kltui.rl.stream import ImportOptions
    from kltui.run.tokenizer import load

    tok = load(str(Path(kltui.reference.__file__).parent / "checkpoint"))
    store, code = await run_import(
        str(planted_file(tmp_path, pairs)), ImportOptions(texts=tok.token_texts)
    )
    assert code == 0
    ids = pairs[0]["ids"]
    assert [store.token_text[i] for i in ids] == tok.token_texts(ids)
