import json

import numpy as np
import pytest

from kltui.run.builtin_prompts import PROMPTS
from kltui.run.prompts import PromptFileError, builtin, finalize, identity_hash, load_file


def test_builtin_has_enough_varied_prompts():
    src = builtin()
    assert len(src.items) >= 48
    assert len(set(src.items)) == len(src.items)
    lengths = [len(p) for p in PROMPTS]
    assert max(lengths) > 4 * min(lengths)


def test_txt_jsonl_json_formats(tmp_path):
    (tmp_path / "a.txt").write_text("first prompt\n\nsecond prompt\n")
    assert load_file(str(tmp_path / "a.txt")).items == ["first prompt", "second prompt"]
    (tmp_path / "b.jsonl").write_text(
        '{"text": "hello"}\n{"input_ids": [1, 2, 3]}\n{"context": "ctx", "question": "q?"}\n'
    )
    assert load_file(str(tmp_path / "b.jsonl")).items == ["hello", [1, 2, 3], "ctx q?"]
    # issue 59: the common `prompt` key (vLLM's custom benchmark files, OpenAI completions)
    (tmp_path / "p.jsonl").write_text('{"prompt": "hi there"}\n{"prompt": [4, 5]}\n')
    assert load_file(str(tmp_path / "p.jsonl")).items == ["hi there", [4, 5]]
    (tmp_path / "p.json").write_text(json.dumps([{"prompt": "a"}, {"prompt": "b"}]))
    assert load_file(str(tmp_path / "p.json")).items == ["a", "b"]
    (tmp_path / "c.json").write_text(json.dumps([[5, 6], [7, 8, 9]]))
    assert load_file(str(tmp_path / "c.json")).items == [[5, 6], [7, 8, 9]]


@pytest.mark.parametrize(
    "name,content,match",
    [
        ("e.txt", "", "contains no prompts"),
        ("bin.txt", b"\x00\x01\x02", "binary"),
        ("bad.jsonl", '{"text": "ok"}\n{nope\n', r"bad.jsonl:2: invalid JSON"),
        ("bad.json", '[[1, 2], ["a"]]', "token-id list"),
        ("rec.jsonl", '{"instruction": "x"}\n', r"rec.jsonl:1: record has none of"),
        ("num.jsonl", '{"prompt": 3}\n', r"num.jsonl:1: field 'prompt' must be a string"),
        ("x.csv", "a,b", "unknown extension"),
        ("neg.json", "[[1, -2]]", ">= 0"),
        ("notlist.json", '{"a": 1}', "expected a JSON list"),
    ],
)
def test_bad_prompt_files(tmp_path, name, content, match):
    p = tmp_path / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(PromptFileError, match=match):
        load_file(str(p))


def test_seeded_truncation_is_reproducible_and_in_range():
    ids = [np.arange(1000) for _ in range(20)]
    a = finalize("s", ids, max_prompt_tokens=100, seed=3)
    b = finalize("s", ids, max_prompt_tokens=100, seed=3)
    c = finalize("s", ids, max_prompt_tokens=100, seed=4)
    assert a.identity == b.identity != c.identity
    assert all(50 <= len(x) <= 150 for x in a.ids)


def test_identity_depends_on_boundaries_not_just_tokens():
    assert identity_hash([np.array([1, 2]), np.array([3])]) != identity_hash(
        [np.array([1]), np.array([2, 3])]
    )


def test_fit_to_context_notes_the_cut():
    p = finalize("s", [np.arange(500)], max_prompt_tokens=None, seed=0, fit_tokens=100)
    assert len(p.ids[0]) == 100 and "cut to 100" in p.notes[0]
