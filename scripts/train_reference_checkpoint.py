#!/usr/bin/env python
"""Train the tiny Llama checkpoint that the kltui reference server ships.

    python scripts/train_reference_checkpoint.py [--out kltui/reference/checkpoint] [--steps N]

Everything is seeded and runs on CPU in a few minutes. The corpus is the project's own
`kltui/reference/corpus.txt` (one paragraph per document, BOS ... EOS around each). Output is an
HF Llama folder that the reference server, transformers, SGLang and vLLM all load:
config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
special_tokens_map.json, generation_config.json.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

# The script runs from a checkout without kltui installed, so import the model from the tree.
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kltui.reference.model import LlamaConfig, LlamaForCausalLM, param_count  # noqa: E402

SPECIALS = ["<s>", "</s>", "<unk>", "<pad>"]  # ids 0..3 in this order
BOS, EOS, PAD = 0, 1, 3


def train_tokenizer(paragraphs: list[str], vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(paragraphs, trainer=trainer)
    # BOS prepended on encode, as HF Llama tokenizers do; SGLang/vLLM tokenize text the same way.
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", BOS)]
    )
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    return tok


def token_stream(tok: Tokenizer, paragraphs: list[str]) -> torch.Tensor:
    ids: list[int] = []
    for p in paragraphs:
        ids += tok.encode(p).ids + [EOS]  # encode adds the BOS
    return torch.tensor(ids, dtype=torch.long)


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def corpus_loss(model: LlamaForCausalLM, stream: torch.Tensor, seq: int) -> float:
    """Mean next-token loss over the whole corpus in non-overlapping windows (deterministic)."""
    total, count = 0.0, 0
    for start in range(0, len(stream) - 1, seq):
        chunk = stream[start : start + seq + 1]
        if len(chunk) < 2:
            break
        logits = model(chunk[None, :-1])[0]
        total += torch.nn.functional.cross_entropy(logits, chunk[1:], reduction="sum").item()
        count += len(chunk) - 1
    return total / count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "kltui/reference/checkpoint"))
    ap.add_argument("--corpus", default=str(REPO / "kltui/reference/corpus.txt"))
    ap.add_argument("--steps", type=int, default=1600)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--intermediate-size", type=int, default=256)
    args = ap.parse_args()

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)

    text = Path(args.corpus).read_text(encoding="utf-8")
    paragraphs = [p.strip().replace("\n", " ") for p in text.split("\n\n") if p.strip()]
    tok = train_tokenizer(paragraphs, 1024)
    stream = token_stream(tok, paragraphs)
    print(f"corpus: {len(text)} chars, {len(paragraphs)} paragraphs, {len(stream)} tokens")

    cfg = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=128,
        intermediate_size=args.intermediate_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,  # head_dim 64: vLLM's CPU attention needs >= 64
        max_position_embeddings=2048,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=BOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    model = LlamaForCausalLM(cfg)
    for name, p in model.named_parameters():
        if name.endswith("layernorm.weight") or name == "model.norm.weight":
            torch.nn.init.ones_(p)
        else:
            torch.nn.init.normal_(p, std=0.02)  # HF's initializer_range
    print(f"model: {param_count(model)} parameters")

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
    gen = torch.Generator().manual_seed(args.seed)
    warmup = max(1, args.steps // 20)
    recent: list[float] = []
    t0 = time.perf_counter()
    model.train()
    for step in range(args.steps):
        starts = torch.randint(0, len(stream) - args.seq - 1, (args.batch,), generator=gen)
        batch = torch.stack([stream[s : s + args.seq + 1] for s in starts.tolist()])
        logits = model(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, cfg.vocab_size), batch[:, 1:].reshape(-1)
        )
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps, args.lr, warmup)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent = (recent + [loss.item()])[-50:]
        if step % 100 == 0 or step == args.steps - 1:
            print(
                f"step {step:5d}  loss {loss.item():.4f}  avg50 {sum(recent) / len(recent):.4f}"
                f"  {time.perf_counter() - t0:6.1f}s",
                flush=True,
            )
    model.eval()
    final = corpus_loss(model, stream, args.seq)
    print(f"final train loss (mean of last 50 steps): {sum(recent) / len(recent):.4f} nats/token")
    print(f"final corpus loss (whole corpus, one pass): {final:.4f} nats/token")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(cfg.to_config_json(), indent=2) + "\n")
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "pad_token": "<pad>",
                "model_max_length": cfg.max_position_embeddings,
                "clean_up_tokenization_spaces": False,
                "add_bos_token": True,
                "add_eos_token": False,
            },
            indent=2,
        )
        + "\n"
    )
    (out / "special_tokens_map.json").write_text(
        json.dumps(
            {
                "bos_token": "<s>",
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "pad_token": "<pad>",
            },
            indent=2,
        )
        + "\n"
    )
    (out / "generation_config.json").write_text(
        json.dumps(
            {
                "bos_token_id": BOS,
                "eos_token_id": EOS,
                "pad_token_id": PAD,
            },
            indent=2,
        )
        + "\n"
    )
    (out / "training_log.json").write_text(
        json.dumps(
            {
                "steps": args.steps,
                "batch": args.batch,
                "seq": args.seq,
                "lr": args.lr,
                "seed": args.seed,
                "corpus_tokens": len(stream),
                "parameters": param_count(model),
                "final_train_loss_last50": round(sum(recent) / len(recent), 4),
                "final_corpus_loss": round(final, 4),
                "train_seconds": round(time.perf_counter() - t0, 1),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
