"""A random-initialised checkpoint with a production model's real architecture, for the H200.

    python bench/make_random_checkpoint.py llama3-8b /root/llama3-8b      (GPU machine, ~16 GB)
    python bench/make_random_checkpoint.py tiny-llama /tmp/x --device cpu (tests: same code path)

The GPU machine reaches no hub, so the weights are made there: the model's config (real shapes,
bf16), weights drawn on the device and written as sharded safetensors with the index file that
HF and SGLang read, and a byte-level BPE tokenizer with the model's real vocabulary size (ids
0..255 are the bytes in GPT-2 order, so "," is id 11 as in Llama 3 and Qwen; then every byte pair,
then byte triples until the regular vocabulary is full; the special tokens sit where the real
model has them). Random weights give meaningless text but real shapes: every GEMM, attention and
sampling kernel runs as in production.

Scales: weights N(0, 0.02) as HF's initializer_range; lm_head N(0, 0.05) so that the logits'
spread (~3 nats at hidden 4096) gives peaked, not uniform, next-token distributions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

LLAMA3_ROPE = {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}

# name -> (config.json, regular vocabulary size, special token names in id order after it)
SHAPES: dict[str, tuple[dict, int, list[str]]] = {
    "llama3-8b": (
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "rms_norm_eps": 1e-5,
            "rope_theta": 500000.0,
            "rope_scaling": LLAMA3_ROPE,
            "hidden_act": "silu",
            "attention_bias": False,
            "mlp_bias": False,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
            "bos_token_id": 128000,
            "eos_token_id": [128001, 128008, 128009],
        },
        128000,
        ["<|begin_of_text|>", "<|end_of_text|>"],
    ),
    "qwen3-8b": (
        {
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "max_position_embeddings": 40960,
            "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0,
            "rope_scaling": None,
            "hidden_act": "silu",
            "attention_bias": False,
            "use_sliding_window": False,
            "sliding_window": None,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
            "bos_token_id": 151643,
            "eos_token_id": 151645,
        },
        151643,
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    ),
    # the same code path at a size a CPU test runs in a second
    "tiny-llama": (
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "vocab_size": 1024,
            "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0,
            "rope_scaling": None,
            "hidden_act": "silu",
            "attention_bias": False,
            "mlp_bias": False,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
            "bos_token_id": 1000,
            "eos_token_id": 1001,
        },
        1000,
        ["<s>", "</s>"],
    ),
}


def bytes_to_unicode() -> list[str]:
    """GPT-2's byte -> printable character map, in its id order (printable bytes first)."""
    bs = list(range(ord("!"), ord("~") + 1))
    bs += list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def vocab_and_merges(n_regular: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Bytes, then byte pairs, then triples (pair + byte): a valid BPE of exactly n_regular ids."""
    alphabet = bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(alphabet)}
    merges: list[tuple[str, str]] = []
    pairs = [a + b for a in alphabet for b in alphabet]
    for p in pairs:
        if len(vocab) >= n_regular:
            break
        vocab[p] = len(vocab)
        merges.append((p[0], p[1]))
    for p in pairs:
        for c in alphabet:
            if len(vocab) >= n_regular:
                return vocab, merges
            vocab[p + c] = len(vocab)
            merges.append((p, c))
    return vocab, merges


def write_tokenizer(out: Path, cfg: dict, n_regular: int, specials: list[str]) -> None:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab, merges = vocab_and_merges(n_regular)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    names = specials + [
        f"<|reserved_special_token_{i}|>"
        for i in range(cfg["vocab_size"] - n_regular - len(specials))
    ]
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in names])
    if tok.get_vocab_size() != cfg["vocab_size"]:
        raise SystemExit(f"tokenizer has {tok.get_vocab_size()} ids, config {cfg['vocab_size']}")
    bos = names[0]
    if cfg["model_type"] == "llama":
        # Llama 3's tokenizer prepends <|begin_of_text|> on encode (so encode(",") is [BOS, 11])
        bos_id = tok.token_to_id(bos)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
        )
    tok.save(str(out / "tokenizer.json"))
    eos_id = cfg["eos_token_id"]
    eos = tok.id_to_token(eos_id[0] if isinstance(eos_id, list) else eos_id)
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": bos,
                "eos_token": eos,
                "model_max_length": cfg["max_position_embeddings"],
                "clean_up_tokenization_spaces": False,
            },
            indent=1,
        )
    )


def tensor_shapes(cfg: dict) -> list[tuple[str, tuple[int, ...], float]]:
    """Every weight of the architecture: (name, shape, init std; 0 means ones, as a norm)."""
    h, v, f = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    d = cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
    out = [("model.embed_tokens.weight", (v, h), 0.02)]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (h,), 0.0),
            (p + "self_attn.q_proj.weight", (q, h), 0.02),
            (p + "self_attn.k_proj.weight", (kv, h), 0.02),
            (p + "self_attn.v_proj.weight", (kv, h), 0.02),
            (p + "self_attn.o_proj.weight", (h, q), 0.02),
            (p + "post_attention_layernorm.weight", (h,), 0.0),
            (p + "mlp.gate_proj.weight", (f, h), 0.02),
            (p + "mlp.up_proj.weight", (f, h), 0.02),
            (p + "mlp.down_proj.weight", (h, f), 0.02),
        ]
        if cfg["model_type"] == "qwen3":
            out += [
                (p + "self_attn.q_norm.weight", (d,), 0.0),
                (p + "self_attn.k_norm.weight", (d,), 0.0),
            ]
    out += [("model.norm.weight", (h,), 0.0), ("lm_head.weight", (v, h), 0.05)]
    return out


def write_weights(out: Path, cfg: dict, device: str, seed: int, shard_bytes: int) -> int:
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator(device=device).manual_seed(seed)
    shards: list[dict] = [{}]
    size = 0
    for name, shape, std in tensor_shapes(cfg):
        if std == 0.0:
            t = torch.ones(shape, dtype=torch.bfloat16, device=device)
        else:
            t = torch.empty(shape, dtype=torch.bfloat16, device=device).normal_(
                0.0, std, generator=gen
            )
        nbytes = t.numel() * 2
        if shards[-1] and size + nbytes > shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = t
        size += nbytes
    weight_map, total = {}, 0
    for i, shard in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        cpu = {k: t.cpu().contiguous() for k, t in shard.items()}
        save_file(cpu, str(out / fname), metadata={"format": "pt"})
        for k, t in cpu.items():
            weight_map[k] = fname
            total += t.numel() * 2
        shard.clear()
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1)
    )
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda", help="where the weights are drawn (cuda or cpu)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-gb", type=float, default=5.0)
    args = ap.parse_args()
    cfg, n_regular, specials = SHAPES[args.shape]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"]})
    )
    write_tokenizer(out, cfg, n_regular, specials)
    t_tok = time.perf_counter() - t0
    total = write_weights(out, cfg, args.device, args.seed, int(args.shard_gb * 2**30))
    print(
        f"{args.shape}: {total / 1e9:.2f} GB of bf16 weights in {out} "
        f"(tokenizer {t_tok:.1f} s, total {time.perf_counter() - t0:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
