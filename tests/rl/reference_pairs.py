"""Rollout and trainer logprobs from the embedded reference server (real torch arithmetic over
HTTP): the rollout side is what its decode gave each generated token, the trainer side what a
fresh prefill of prompt + output gives the same tokens (the recomputation an RL trainer does).
Tests plant offsets on top to put a known mismatch at known places."""

from __future__ import annotations

import httpx

PROMPTS = [  # the reference checkpoint's vocabulary has 1024 ids
    [1, 45, 499, 173, 170, 29],
    [1, 172, 338, 278, 748, 310],
    [1, 311, 246, 746, 263],
    [1, 450, 817, 322, 278, 112, 230],
    [1, 306, 763, 304, 130],
    [1, 910, 338, 263, 124, 310, 278],
]


def reference_pairs(url: str, new_tokens: int = 24) -> list[dict]:
    """Per prompt: prompt ids, generated ids, rollout (decode) and trainer (prefill) logprobs."""
    with httpx.Client(base_url=url, timeout=120) as c:
        gen = c.post(
            "/generate",
            json={
                "input_ids": PROMPTS,
                "sampling_params": {
                    "max_new_tokens": new_tokens,
                    "temperature": 0.0,
                    "ignore_eos": True,
                },
                "return_logprob": True,
                "logprob_start_len": -1,
            },
        )
        gen.raise_for_status()
        gen = gen.json()
        outs = [[int(e[1]) for e in g["meta_info"]["output_token_logprobs"]] for g in gen]
        full = [p + o for p, o in zip(PROMPTS, outs, strict=True)]
        pre = c.post(
            "/generate",
            json={
                "input_ids": full,
                "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
                "return_logprob": True,
                "logprob_start_len": 0,
            },
        )
        pre.raise_for_status()
        pre = pre.json()
    pairs = []
    for p, o, g, f in zip(PROMPTS, outs, gen, pre, strict=True):
        rollout = [float(e[0]) for e in g["meta_info"]["output_token_logprobs"]]
        entries = f["meta_info"]["input_token_logprobs"][-len(o) :]
        assert [int(e[1]) for e in entries] == o  # the prefill scored the generated tokens
        pairs.append(
            {"prompt": p, "ids": o, "rollout": rollout, "trainer": [float(e[0]) for e in entries]}
        )
    return pairs


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.rl.reference_pairs --server URL --out FILE`: docs/RL.md's fixture, the
    server's own decode (rollout) and prefill (trainer) logprobs with planted trainer offsets."""
    import argparse
    from pathlib import Path

    from tests.rl.files import header, record, write_jsonl

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--server", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    url = args.server if "://" in args.server else f"http://{args.server}"
    planted = {1: [(7, -0.05)], 3: [(2, -0.4)], 4: [(20, -0.01)]}  # sample: [(position, offset)]
    recs = []
    for i, p in enumerate(reference_pairs(url)):
        trainer = list(p["trainer"])
        for pos, off in planted.get(i, []):
            trainer[pos] = min(trainer[pos] + off, 0.0)
        recs.append(record(p["prompt"], p["ids"], p["rollout"], trainer, id=f"s{i}", step=1))
    write_jsonl(Path(args.out), recs, first=header(model="kltui-tiny", engine="kltui reference"))
    print(f"wrote {args.out}: {len(recs)} samples, offsets planted in samples {sorted(planted)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
