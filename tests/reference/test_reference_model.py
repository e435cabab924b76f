"""The shipped checkpoint and the model's arithmetic, in-process."""

from __future__ import annotations

import json

import pytest
import torch

from kltui.reference import CHECKPOINT_DIR
from kltui.reference.model import Segment, load_model
from kltui.reference.tokenizer import TextTokenizer

TEXT = "The river begins as a small spring high in the hills, where cold water bubbles out"


@pytest.fixture(scope="module")
def model():
    # One thread, as the server runs: OpenMP threads spin badly on a busy two-core machine.
    torch.set_num_threads(1)
    return load_model(CHECKPOINT_DIR)


@pytest.fixture(scope="module")
def tok():
    return TextTokenizer(CHECKPOINT_DIR)


def test_checkpoint_is_a_small_hf_llama_folder() -> None:
    names = {p.name for p in CHECKPOINT_DIR.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    } <= names
    assert sum(p.stat().st_size for p in CHECKPOINT_DIR.iterdir()) < 4 * 2**20
    cfg = json.loads((CHECKPOINT_DIR / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["model_type"] == "llama"
    assert cfg["hidden_size"] // cfg["num_attention_heads"] >= 64  # vLLM's CPU attention
    assert cfg["tie_word_embeddings"] is False and cfg["torch_dtype"] == "float32"
    tc = json.loads((CHECKPOINT_DIR / "tokenizer_config.json").read_text())
    assert tc["tokenizer_class"] == "PreTrainedTokenizerFast"


def test_safetensors_use_hf_parameter_names() -> None:
    from safetensors import safe_open

    with safe_open(str(CHECKPOINT_DIR / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert {
        "model.embed_tokens.weight",
        "model.norm.weight",
        "lm_head.weight",
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.1.mlp.down_proj.weight",
        "model.layers.0.input_layernorm.weight",
    } <= keys


def test_tokenizer_prepends_bos_and_round_trips(tok) -> None:
    ids = tok.encode(TEXT)
    assert ids[0] == tok.bos_token_id == 0
    assert tok.decode(ids) == TEXT
    assert tok.eos_token_id == 1


def test_model_is_trained_peaked_on_its_corpus(model, tok) -> None:
    ids = torch.tensor([tok.encode(TEXT)])
    with torch.no_grad():
        logits = model(ids)[0]
    loss = torch.nn.functional.cross_entropy(logits[:-1], ids[0, 1:]).item()
    assert loss < 1.0


def test_serving_paths_agree_with_the_full_forward(model, tok) -> None:
    ids = torch.tensor(tok.encode(TEXT))
    with torch.no_grad():
        full = model(ids[None])[0]
    n = len(ids)
    batched = model.logits_batched(model.forward_batched(ids, [Segment(model.new_kv(n), 0, n)]))
    rowwise = model.logits_rowwise(model.forward_rowwise(ids, [Segment(model.new_kv(n), 0, n)]))
    # Single-row matmuls round differently from the batched ones: a few ulps of logits near 20.
    assert torch.allclose(batched, full, atol=1e-4, rtol=0)
    assert torch.allclose(rowwise, full, atol=1e-4, rtol=0)


def test_rowwise_prefill_and_decode_are_bit_identical(model, tok) -> None:
    ids = torch.tensor(tok.encode(TEXT))
    n = len(ids)
    kv_a, kv_b = model.new_kv(n), model.new_kv(n)
    prefill = model.forward_rowwise(ids, [Segment(kv_a, 0, n)])
    # Decode the last 8 tokens one at a time, next to an unrelated request in the same step.
    other = model.new_kv(n)
    model.forward_rowwise(ids[: n - 8], [Segment(kv_b, 0, n - 8)])
    model.forward_rowwise(ids[:3], [Segment(other, 0, 3)])
    rows = []
    for p in range(n - 8, n):
        step = model.forward_rowwise(
            torch.tensor([ids[p], ids[p % 3]]), [Segment(kv_b, p, 1), Segment(other, 3 + p % 3, 1)]
        )
        rows.append(step[0])
    assert torch.equal(torch.stack(rows), prefill[n - 8 :])
    assert torch.equal(kv_a, kv_b)


def test_matches_hf_transformers_llama(model, tok) -> None:
    transformers = pytest.importorskip(
        "transformers", reason="transformers is not installed; the HF comparison needs it"
    )
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(CHECKPOINT_DIR))
    assert hf_tok(TEXT)["input_ids"] == tok.encode(TEXT)
    assert hf_tok.decode(tok.encode(TEXT), skip_special_tokens=True) == TEXT
    ids = torch.tensor([tok.encode(TEXT)])
    with torch.no_grad():
        ours = model(ids)[0]
    # Eager attention does the same operations in the same order: agreement to ~1e-5 or better.
    eager = transformers.LlamaForCausalLM.from_pretrained(
        str(CHECKPOINT_DIR), torch_dtype=torch.float32, attn_implementation="eager"
    ).eval()
    with torch.no_grad():
        assert torch.allclose(ours, eager(ids).logits[0], atol=1e-5, rtol=0)
    # SDPA is a different kernel: float32 rounding only (logits here reach ~20).
    sdpa = transformers.LlamaForCausalLM.from_pretrained(
        str(CHECKPOINT_DIR), torch_dtype=torch.float32, attn_implementation="sdpa"
    ).eval()
    with torch.no_grad():
        assert torch.allclose(ours, sdpa(ids).logits[0], atol=1e-4, rtol=0)
    # The serving paths against HF too, through a KV cache filled by a prefill then decodes.
    n = ids.shape[1]
    kv = model.new_kv(n)
    hidden = [model.forward_batched(ids[0, : n - 4], [Segment(kv, 0, n - 4)])]
    hidden += [
        model.forward_batched(ids[0, p : p + 1], [Segment(kv, p, 1)]) for p in range(n - 4, n)
    ]
    with torch.no_grad():
        assert torch.allclose(
            model.logits_batched(torch.cat(hidden)), eager(ids).logits[0], atol=1e-4, rtol=0
        )
