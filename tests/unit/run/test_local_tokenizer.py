"""The local tokenizer for servers without one (--tokenizer, --separator-ids): both libraries
encode "," as SGLang's helper does, names resolve in the local HF cache only, and every missing
piece is a one-line usage error."""

from __future__ import annotations

import shutil
import sys

import pytest

from kltui.errors import UsageError
from kltui.reference import CHECKPOINT_DIR
from kltui.reference.tokenizer import TextTokenizer
from kltui.run.config import ConfigError, load_config_file
from kltui.run.tokenizer import TokenizerError, load, parse_separator_ids, resolve

CKPT = str(CHECKPOINT_DIR)


def test_transformers_and_tokenizers_encode_the_same():
    pytest.importorskip("transformers")
    with_tf = load(CKPT)
    assert with_tf.library == "transformers"
    # kl_test_utils: get_tokenizer(model).encode(",") with special tokens: BOS + ","
    assert with_tf.encode(",") == [0, 15]
    ref = TextTokenizer(CHECKPOINT_DIR)
    text = "Once upon a time, a fox ran."
    assert with_tf.encode(text) == ref.encode(text)
    ids = ref.encode(text)
    assert with_tf.token_texts(ids) == [ref.token_text[i] for i in ids]


def test_a_plain_fast_tokenizer_is_read_by_tokenizers_and_encodes_as_transformers(tmp_path):
    """No add_bos_token/add_eos_token in tokenizer_config.json: AutoTokenizer's encode is
    tokenizer.json's own template, so the fast library (no torch import, milliseconds) gives
    SGLang's ids; here a Llama-3-style template that prepends BOS (bench/make_random_checkpoint)."""
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "bench" / "make_random_checkpoint.py"
    out = tmp_path / "ck"
    subprocess.run(
        [sys.executable, str(script), "tiny-llama", str(out), "--device", "cpu"],
        check=True,
        capture_output=True,
    )
    tok = load(str(out))
    assert tok.library == "tokenizers"
    assert tok.encode(",") == [1000, 11]  # BOS + "," as Llama 3's encode(",") = [128000, 11]
    transformers = pytest.importorskip("transformers")
    auto = transformers.AutoTokenizer.from_pretrained(str(out), use_fast=True)
    for text in (",", "Once upon a time, a fox ran.", " spaced  out\n"):
        assert tok.encode(text) == auto.encode(text)


def test_a_config_that_sets_bos_or_eos_goes_through_transformers():
    pytest.importorskip("transformers")
    # the shipped checkpoint's tokenizer_config.json sets add_bos_token
    assert load(CKPT).library == "transformers"


def test_tokenizers_library_when_transformers_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails
    tok = load(CKPT)
    assert tok.library == "tokenizers" and tok.encode(",") == [0, 15]
    assert tok.describe().endswith("(tokenizers)")


def test_neither_library_names_the_ways_out(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(TokenizerError) as e:
        load(CKPT)
    msg = str(e.value)
    assert "\n" not in msg and "pip install tokenizers" in msg and "--separator-ids" in msg


def test_a_name_resolves_in_the_local_hf_cache_only(monkeypatch, tmp_path):
    repo = tmp_path / "models--acme--tiny-llama"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    shutil.copy(CHECKPOINT_DIR / "tokenizer.json", snap / "tokenizer.json")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert resolve("acme/tiny-llama") == snap
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert load("acme/tiny-llama").encode(",") == [0, 15]
    with pytest.raises(TokenizerError, match="local Hugging Face cache"):
        resolve("acme/not-there")


def test_a_file_that_is_not_tokenizer_json_is_refused(tmp_path):
    f = tmp_path / "vocab.txt"
    f.write_text("x")
    with pytest.raises(TokenizerError, match="not a folder"):
        resolve(str(f))
    assert resolve(str(CHECKPOINT_DIR / "tokenizer.json")) == CHECKPOINT_DIR


@pytest.mark.parametrize(
    ("text", "ids"), [("11", [11]), ("128000,11", [128000, 11]), ("1, 11", [1, 11])]
)
def test_separator_ids_parse(text, ids):
    assert parse_separator_ids(text) == ids


@pytest.mark.parametrize("text", ["", ",", "a", "1,-2", "1.5"])
def test_bad_separator_ids_are_usage_errors(text):
    with pytest.raises(UsageError, match="--separator-ids"):
        parse_separator_ids(text)


def test_config_file_keys(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(f"tokenizer: {CKPT}\nseparator_ids: [128000, 11]\n")
    cfg = load_config_file(str(p))
    assert cfg.tokenizer == CKPT and cfg.separator_ids == [128000, 11]
    p.write_text('separator_ids: "1,11"\n')
    assert load_config_file(str(p)).separator_ids == [1, 11]
    p.write_text("separator_ids: 11\n")
    assert load_config_file(str(p)).separator_ids == [11]
    p.write_text("samples: 4\nseparator_ids: [1, -3]\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:2: 'separator_ids'"):
        load_config_file(str(p))
    p.write_text("tokenizer: 3\n")
    with pytest.raises(ConfigError, match="'tokenizer' must be"):
        load_config_file(str(p))


def test_sample_config_for_rollout_servers_loads():
    from pathlib import Path

    cfg = load_config_file(
        str(Path(__file__).parents[3] / "sample_configs/rollout_server_ids_only.yaml")
    )
    assert cfg.separator_ids == [128000, 11] and cfg.tokenizer is None


def test_server_lines_and_settings_table_name_a_server_without_tokenizer():
    from kltui.engines.identity import ServerIdentity
    from kltui.session.servers import NO_TOKENIZER, settings_rows
    from kltui.words.server_facts import server_facts

    base = ServerIdentity.of({"url": "http://127.0.0.1:1", "engine": "sglang", "version": "0.5.23"})
    assert NO_TOKENIZER not in server_facts(base)
    assert "server tokenizer" not in [label for label, _ in settings_rows([base])]
    notok = ServerIdentity.of({**base.reported, "skip_tokenizer_init": True})
    # the one fact more (its words: tests/unit/words/test_golden_server_facts.py)
    assert notok.skip_tokenizer_init and server_facts(notok) == [*server_facts(base), NO_TOKENIZER]
    rows = dict(settings_rows([base, notok]))
    assert rows["server tokenizer"] == ["yes", "none (--skip-tokenizer-init): ids only"]


def test_a_transformers_that_cannot_load_falls_back_to_tokenizers(monkeypatch):
    transformers = pytest.importorskip("transformers")

    def broken(*a, **kw):
        raise RuntimeError("operator torchvision::nms does not exist")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", broken)
    tok = load(CKPT)
    assert tok.library == "tokenizers" and tok.encode(",") == [0, 15]
