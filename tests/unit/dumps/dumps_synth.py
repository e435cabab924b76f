"""Synthetic dump folders laid out as SGLang's dumper writes them (non-intrusive mode `all`).

A tiny decoder (embedding, per layer: norm -> qkv_proj -> attention over the KV of every earlier
position -> residual add, final norm, logits of the last row) computed one row at a time, so the
decode run and the fresh prefill are bit-identical unless a difference is planted."""

from __future__ import annotations

from pathlib import Path

import torch

LAYERS = 2


class Model:
    def __init__(self, vocab: int = 40, hidden: int = 8, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.emb = torch.randn(vocab, hidden, generator=g)
        self.w = [torch.randn(hidden, hidden, generator=g) * 0.4 for _ in range(LAYERS)]
        self.lm = torch.randn(hidden, vocab, generator=g)


class Writer:
    """Writes passes into one experiment folder with the dumper's naming and global indices."""

    def __init__(self, folder: Path, step0: int = 0, rank: int = 0) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.step, self.rank, self.index = step0, rank, 0

    def dump(self, name: str, value, **ctx) -> None:
        self.index += 1
        tags = {"step": self.step, "rank": self.rank, "dump_index": self.index, "name": name}
        tags["recompute_status"] = "disabled"
        tags |= ctx
        fname = "___".join(f"{k}={v}" for k, v in tags.items()) + ".pt"
        meta = dict(tags, world_rank=self.rank, world_size=1)
        torch.save({"value": value, "meta": meta}, self.folder / fname)


def _rows(fn, x: torch.Tensor) -> torch.Tensor:
    return torch.stack([fn(x[i]) for i in range(x.shape[0])])


def run_pass(
    w: Writer,
    m: Model,
    tokens: list[int],
    positions: list[int],
    cache: dict,
    rid: str = "rid-a",
    plant: dict | None = None,
    extra_rid: str | None = None,
) -> int:
    """One forward pass; returns the greedy next token. `plant` = {"module", "eps"} adds eps
    to that module's output in this pass; with "at": "input" it adds eps to what the module
    receives, after the previous module's output was dumped (a difference that arises in code
    between hooks; input_layernorm and attn only); {"module", "set": (row, x)} writes x into
    element 0 of that row of the module's output instead (a -0.0 against a +0.0, a NaN)."""
    ni = "non_intrusive__"
    ids = torch.tensor(tokens, dtype=torch.int64)
    pos = torch.tensor(positions, dtype=torch.int64)
    rids = [rid] if extra_rid is None else [rid, extra_rid]

    def out(module: str, value: torch.Tensor) -> torch.Tensor:
        if plant and plant["module"] == module and plant.get("at") != "input":
            if "set" in plant:
                row, x = plant["set"]
                value = value.clone()
                value[row, 0] = x
            else:
                value = value + plant["eps"]
        return value

    def inp(module: str, value: torch.Tensor) -> torch.Tensor:
        if plant and plant["module"] == module and plant.get("at") == "input":
            value = value + plant["eps"]
        return value

    w.dump(f"{ni}inputs.0", ids)
    w.dump(f"{ni}inputs.1", pos)
    w.dump("input_ids", ids)
    w.dump("seq_lens", torch.tensor([positions[-1] + 1] * len(rids)))
    w.dump("positions", pos)
    w.dump("req_pool_indices", torch.tensor(list(range(len(rids)))))
    w.dump("rids", rids)
    w.dump(f"{ni}model.embed_tokens.inputs.0", ids)
    h = out("model.embed_tokens", m.emb[ids].clone())
    w.dump(f"{ni}model.embed_tokens.output", h)
    for layer in range(LAYERS):
        p = f"{ni}model.layers.{layer}"
        lid = {"layer_id": layer}
        w.dump(f"{p}.inputs.0", pos, **lid)
        w.dump(f"{p}.inputs.1", h, **lid)
        h_in = inp(f"model.layers.{layer}.input_layernorm", h)
        w.dump(f"{p}.input_layernorm.inputs.0", h_in, **lid)
        n = out(
            f"model.layers.{layer}.input_layernorm",
            _rows(lambda r: r / (r.pow(2).mean() + 1e-6).sqrt(), h_in),
        )
        w.dump(f"{p}.input_layernorm.output", n, **lid)
        w.dump(f"{p}.self_attn.inputs.0", n, **lid)
        w.dump(f"{p}.self_attn.qkv_proj.inputs.0", n, **lid)
        wl = m.w[layer]
        v = out(f"model.layers.{layer}.self_attn.qkv_proj", _rows(lambda r, wl=wl: r @ wl, n))
        w.dump(f"{p}.self_attn.qkv_proj.output", v, **lid)
        v = inp(f"model.layers.{layer}.self_attn.attn", v)
        w.dump(f"{p}.self_attn.attn.inputs.0", v, **lid)
        for i, q in enumerate(positions):
            cache[(layer, q)] = v[i]
        att = []
        for q in positions:
            acc = torch.zeros_like(v[0])
            for j in range(q + 1):
                acc = acc + cache[(layer, j)]
            att.append(acc / (q + 1))
        a = out(f"model.layers.{layer}.self_attn.attn", torch.stack(att))
        w.dump(f"{p}.self_attn.attn.output", a, **lid)
        w.dump(f"{p}.self_attn.output", a, **lid)
        h = h + a
        w.dump(f"{p}.output.0", h)
        w.dump(f"{p}.output.1", a)
    w.dump(f"{ni}model.norm.inputs.0", h)
    hn = out("model.norm", _rows(lambda r: r / (r.pow(2).mean() + 1e-6).sqrt(), h))
    w.dump(f"{ni}model.norm.output", hn)
    logits = (hn[-1] @ m.lm).unsqueeze(0)
    w.dump(f"{ni}output.next_token_logits", logits)
    w.step += 1
    return int(logits[0].argmax())


def make_pair(
    root: Path,
    *,
    prompt: list[int] | None = None,
    k: int = 4,
    plant_decode: dict | None = None,
    plant_prompt: dict | None = None,
    tamper_tokens: bool = False,
    busy_step: int | None = None,
    ranks: tuple[int, ...] = (0,),
    ranks_b: tuple[int, ...] | None = None,
    overlap_extra: bool = False,
    plant_both: dict | None = None,
    plant_rank: int | None = None,
) -> tuple[Path, Path]:
    """A (prompt prefill + k decode steps) and B (fresh prefill of prompt + k tokens).
    plant_decode = {"step": k, "module": ..., "eps": ...}; plant_prompt = {"module", "eps"}
    (either with "at": "input", see run_pass). plant_both = {"step": k, "module", "a": x,
    "b": y} writes x into element 0 of that module's output at decode step k and y into the
    same element of the fresh prefill's row at that position (x = -0.0, y = +0.0: the same
    value in other bits). plant_rank: plant_decode on that rank only (a two-rank run whose
    ranks disagree)."""
    prompt = prompt or [3, 14, 15, 9, 26, 5]
    m = Model()
    a, b = root / "exp_decode", root / "exp_prefill"
    for rank in ranks:
        wa = Writer(a, step0=10, rank=rank)
        cache: dict = {}
        nxt = run_pass(wa, m, prompt, list(range(len(prompt))), cache, plant=plant_prompt)
        out = [nxt]
        for step in range(1, k + 1):
            plant = None
            on_rank = plant_rank is None or plant_rank == rank
            if plant_decode and plant_decode["step"] == step and on_rank:
                plant = plant_decode
            if plant_both and plant_both["step"] == step:
                plant = {"module": plant_both["module"], "set": (0, plant_both["a"])}
            p = len(prompt) + step - 1
            extra = "other" if busy_step == step else None
            out.append(run_pass(wa, m, [out[-1]], [p], cache, plant=plant, extra_rid=extra))
        if overlap_extra:
            run_pass(wa, m, [out[-1]], [len(prompt) + k], cache)
    for rank in ranks_b or ranks:
        wb = Writer(b, step0=10 + k + 1, rank=rank)
        fed = out[:k]
        if tamper_tokens:
            fed = [(t + 1) % 40 for t in fed]
        cache_b: dict = {}
        plant_b = None
        if plant_both:
            row = len(prompt) + plant_both["step"] - 1
            plant_b = {"module": plant_both["module"], "set": (row, plant_both["b"])}
        t = run_pass(
            wb, m, prompt + fed, list(range(len(prompt) + k)), cache_b, rid="rid-b", plant=plant_b
        )
        if overlap_extra:
            # what an overlap scheduler does after the last token: one more decode pass
            run_pass(wb, m, [t], [len(prompt) + k], cache_b, rid="rid-b")
    return a, b
