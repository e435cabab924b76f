"""Import files written by the tests: kltui-rl JSONL and Parquet, verl batch rows and slime
train dumps, from arrays the test chooses (tests/rl/reference_pairs.py gets them from the
reference server)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson


def header(version: int = 1, **meta) -> dict:
    """A kltui-rl header line."""
    return {"format": "kltui-rl", "version": version, **meta}


def record(prompt, ids, rollout, trainer, mask=None, **extra) -> dict:
    """A kltui-rl record (arrays as lists)."""
    rec = {
        "prompt_ids": list(map(int, prompt)),
        "response_ids": list(map(int, ids)),
        "rollout_logprobs": [float(x) for x in rollout],
        "trainer_logprobs": [float(x) for x in trainer],
        **extra,
    }
    if mask is not None:
        rec["loss_mask"] = list(map(int, mask))
    return rec


def write_jsonl(path: Path, lines: list[dict | bytes], *, first: dict | None = None) -> Path:
    """One JSON object per line (bytes written as they are), the header first unless None."""
    with open(path, "wb") as f:
        for obj in ([first] if first is not None else []) + list(lines):
            f.write(
                obj
                if isinstance(obj, bytes)
                else orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
            )
    return path


def write_parquet(path: Path, records: list[dict], meta: dict | None = None) -> Path:
    """kltui-rl records as a Parquet file (metadata key kltui-rl unless meta is {})."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {k: [r.get(k) for r in records] for k in records[0]}
    table = pa.table(cols)
    if meta != {}:
        table = table.replace_schema_metadata({b"kltui-rl": orjson.dumps(meta or header())})
    pq.write_table(table, path)
    return path


def verl_row(prompt, ids, rollout, trainer, width: int, plen: int, mask=None, **extra) -> dict:
    """One sample of a verl batch as the DataProto tensors hold it: the prompt left-padded to
    `plen`, the response right-padded to `width`, attention_mask over both, response_mask."""
    n, p = len(ids), len(prompt)
    pad = 0
    resp_mask = np.zeros(width, dtype=np.int64)
    resp_mask[:n] = 1 if mask is None else np.asarray(mask)
    return {
        "prompts": [pad] * (plen - p) + list(prompt),
        "responses": list(ids) + [pad] * (width - n),
        "attention_mask": [0] * (plen - p) + [1] * p + [1] * n + [0] * (width - n),
        "response_mask": resp_mask.tolist(),
        "old_log_probs": list(map(float, trainer)) + [0.0] * (width - n),
        "rollout_log_probs": list(map(float, rollout)) + [0.0] * (width - n),
        **extra,
    }


def slime_train_dump(path: Path, samples: list[tuple], rollout_id: int = 3) -> Path:
    """A slime train dump (format_version 2) as `--save-debug-train-data` writes it."""
    import torch

    out = []
    for pos, (prompt, ids, rollout, trainer, mask) in enumerate(samples):
        n = len(ids)
        out.append(
            {
                "data_parallel_rank": 0,
                "rollout_position": pos,
                "tokens": torch.tensor(list(prompt) + list(ids)),
                "response_lengths": n,
                "total_lengths": len(prompt) + n,
                "loss_masks": torch.tensor([1] * n if mask is None else list(mask)),
                "log_probs": torch.tensor(trainer, dtype=torch.float32),
                "rollout_log_probs": torch.tensor(rollout, dtype=torch.float32),
            }
        )
    torch.save(
        {"format_version": 2, "rollout_id": rollout_id, "rank": 0, "samples": out, "dp_shards": []},
        path,
    )
    return path
