"""Size of a default `kltui check` recording (32 samples x 512 tokens, three helpers).

    python bench/bench_recording_size.py [--samples 32] [--tokens 512] [--vocab 151936]

Writes through the real Recorder the events a default, non-streamed run makes (one
TokensDecoded and one SampleScored per sample and helper, float32 logprobs as SGLang sends them,
the summaries, and the follow-up extras of the 3 worst samples per helper) and prints the file
size; then the same run the way kltui recorded it before issue 12 (float64 arrays, top-5 and
token text at every scored position of every sample) for comparison. Budget (DESIGN 8): <= 4 MB.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kltui.helpers.extras import windows  # noqa: E402
from kltui.metrics.k3 import ScoreBook  # noqa: E402
from kltui.session import codec  # noqa: E402
from kltui.session.events import (  # noqa: E402
    ExtrasFetched,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    RunFinished,
    SampleScored,
    TokensDecoded,
)
from kltui.session.recording import Recorder  # noqa: E402

HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")
URL = "http://127.0.0.1:30000"


def events(n: int, length: int, vocab: int, old: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    for helper in HELPERS:
        yield HelperStarted(helper, URL, n, 0.002, 1e-3, {"max_new_tokens": length})
        yield PhaseChanged(helper, URL, "decode")
        book = ScoreBook(1e-3)
        for s in range(n):
            ids = rng.integers(0, vocab, size=length)
            lp_b = (-np.abs(rng.normal(0.8, 0.6, size=length))).astype(np.float32)
            lp_a = lp_b.copy()
            # bf16-like noise: most tokens identical, a few differ in the last float32 bits
            flip = rng.random(length) < 0.3
            lp_a[flip] = np.nextafter(lp_a[flip], np.float32(0))
            lp_a, lp_b = lp_a.astype(np.float64), lp_b.astype(np.float64)
            yield TokensDecoded(helper, URL, s, 0, ids, lp_b)
            book.add(s, ids, lp_a, lp_b, 0, 2000)
            top = texts = None
            if old:
                top = [
                    [[int(t), float(v)] for t, v in zip(rng.integers(0, vocab, 5), lp_a[i] - [0, 1, 2, 3, 4], strict=True)]
                    for i in range(length)
                ]  # fmt: skip
                texts = [f" tok{int(t)}" for t in ids]
            yield SampleScored(helper, URL, s, ids, lp_a, lp_b, 0, 2000, top_a=top, texts=texts)
        yield HelperFinished(helper, URL, book.summary(n_samples=n, n_skipped=0, threshold=0.002))
        if old:
            continue
        worst = sorted(book.samples.values(), key=lambda x: -x.metrics.mean_k3)[:3]
        for sc in worst:
            for lo, hi in windows(sc.metrics):
                w = hi - lo
                top = [
                    [[int(t), float(v)] for t, v in zip(rng.integers(0, vocab, 5), sc.lp_a[lo + i] - [0, 1, 2, 3, 4], strict=True)]
                    for i in range(w)
                ]  # fmt: skip
                yield ExtrasFetched(
                    helper,
                    URL,
                    sc.sample,
                    lo,
                    sc.token_ids[lo:hi],
                    sc.lp_a[lo:hi],
                    top,
                    texts=[f" tok{int(t)}" for t in sc.token_ids[lo:hi]],
                    alt_texts={str(int(t[0])): f" tok{t[0]}" for pos in top for t in pos},
                    reason="worst",
                )
    yield RunFinished({"helpers": 3}, "pass")


def size(n: int, length: int, vocab: int, old: bool) -> int:
    path = Path(tempfile.mkdtemp()) / "r.kltui.jsonl"
    saved = codec._float_code, codec._int_code
    if old:  # the encoding before issue 12: always float64 and int32
        codec._float_code = lambda a: "f8"
        codec._int_code = lambda a: "i4" if not a.size or np.abs(a).max() < 2**31 else "i8"
    try:
        rec = Recorder(path)
        for ev in events(n, length, vocab, old):
            rec.write(ev)
        rec.close()
    finally:
        codec._float_code, codec._int_code = saved
    return os.path.getsize(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=512)
    args = ap.parse_args()
    print(f"default `kltui check` recording, {args.samples} samples x {args.tokens} tokens x 3")
    for vocab in (1024, 151_936):
        new = size(args.samples, args.tokens, vocab, old=False)
        old = size(args.samples, args.tokens, vocab, old=True)
        print(
            f"  vocab {vocab:>7}: now {new / 1e6:.2f} MB; before issue 12 (f8, top-5 + text at "
            f"every position) {old / 1e6:.2f} MB -> {old / new:.1f}x smaller"
        )


if __name__ == "__main__":
    main()
