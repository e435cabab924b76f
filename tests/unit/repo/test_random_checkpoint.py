"""bench/make_random_checkpoint.py: the H200's production-shaped checkpoints, made on a CPU at a
tiny size by the same code (shapes, index, tokenizer) and checked the way SGLang reads them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "make_random_checkpoint.py"

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ckpt")
    subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "tiny-llama",
            str(out),
            "--device",
            "cpu",
            "--shard-gb",
            "0.0002",
        ],
        check=True,
        capture_output=True,
    )
    return out


def test_every_weight_has_the_config_shape_and_bf16(checkpoint):
    from safetensors import safe_open

    cfg = json.loads((checkpoint / "config.json").read_text())
    index = json.loads((checkpoint / "model.safetensors.index.json").read_text())
    shards = set(index["weight_map"].values())
    assert len(shards) > 1  # the index, not one file, is what SGLang follows
    h, d = cfg["hidden_size"], cfg["head_dim"]
    kv = cfg["num_key_value_heads"] * d
    seen = {}
    for shard in shards:
        with safe_open(str(checkpoint / shard), "pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
                assert str(t.dtype) == "torch.bfloat16", name
                seen[name] = tuple(t.shape)
    assert set(seen) == set(index["weight_map"])
    assert seen["model.embed_tokens.weight"] == (cfg["vocab_size"], h)
    assert seen["lm_head.weight"] == (cfg["vocab_size"], h)
    assert seen["model.layers.1.self_attn.k_proj.weight"] == (kv, h)
    assert seen["model.layers.1.mlp.down_proj.weight"] == (h, cfg["intermediate_size"])
    assert sum(1 for n in seen if n.endswith("q_proj.weight")) == cfg["num_hidden_layers"]


def test_tokenizer_has_the_real_vocab_size_and_llama3_comma(checkpoint):
    from tokenizers import Tokenizer

    cfg = json.loads((checkpoint / "config.json").read_text())
    tok = Tokenizer.from_file(str(checkpoint / "tokenizer.json"))
    assert tok.get_vocab_size() == cfg["vocab_size"]
    # as Llama 3's tokenizer: BOS prepended, "," is id 11 (GPT-2 byte order)
    assert tok.encode(",").ids == [cfg["bos_token_id"], 11]
    text = "hello, world"
    assert tok.decode(tok.encode(text).ids, skip_special_tokens=True) == text
