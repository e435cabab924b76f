"""The three KL helper sequences done by hand over HTTP, as SGLang's kl_test_utils does them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from kltui.reference.launcher import ReferenceServer

PROMPTS = [
    "The kitchen was quiet in the early morning, and the bread dough had risen slowly",
    "Light travels through empty space at about three hundred thousand kilometres per second.",
    "A function is a named block of code that performs one task. You give the function some",
    "The train left the station a few minutes after nine and followed the river through a",
]
GREEDY = {"temperature": 0.0, "ignore_eos": True}


def k3(a: Sequence[float], b: Sequence[float]) -> list[float]:
    out = []
    for x, y in zip(a, b, strict=True):
        r = x - y
        out.append(math.exp(r) - 1 - r)
    return out


@dataclass
class HelperResult:
    k3: list[list[float]]  # per sample, per generated token
    cached: list[int]
    prompt_lens: list[int]

    @property
    def sample_means(self) -> list[float]:
        return [sum(x) / len(x) for x in self.k3]

    @property
    def avg_kl_div(self) -> float:
        return sum(self.sample_means) / len(self.sample_means)


class RefClient:
    """A thin client for one reference server, with the helper sequences spelled out."""

    def __init__(self, server: ReferenceServer, headers: dict | None = None) -> None:
        self.server = server
        self.http = httpx.Client(base_url=server.url, timeout=60.0, headers=headers or {})

    def post(self, path: str, body: dict) -> httpx.Response:
        return self.http.post(path, json=body)

    def generate(self, body: dict) -> list[dict] | dict:
        resp = self.post("/generate", body)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def flush(self) -> None:
        resp = self.http.post("/flush_cache", params={"timeout": 30})
        assert resp.status_code == 200, resp.text

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        res = self.generate(
            {
                "text": list(texts),
                "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
                "return_logprob": True,
                "logprob_start_len": 0,
            }
        )
        return [[e[1] for e in r["meta_info"]["input_token_logprobs"]] for r in res]

    def decode_batch(self, batch: Sequence[Sequence[int]], max_new_tokens: int) -> list[dict]:
        return self.generate(
            {
                "input_ids": [list(x) for x in batch],
                "sampling_params": {**GREEDY, "max_new_tokens": max_new_tokens},
                "return_logprob": True,
                "return_text_in_logprobs": False,
                "logprob_start_len": -1,
            }
        )

    def replay(self, batch: Sequence[Sequence[int]], outs: Sequence[Sequence[int]]) -> list[list]:
        """Flush, then a prefill of prompt+output; the last len(out) input entries score out."""
        self.flush()
        res = self.generate(
            {
                "input_ids": [list(p) + list(o) for p, o in zip(batch, outs, strict=True)],
                "sampling_params": {**GREEDY, "max_new_tokens": 0},
                "return_logprob": True,
                "return_text_in_logprobs": False,
                "logprob_start_len": 0,
            }
        )
        tails = []
        for r, o in zip(res, outs, strict=True):
            entries = r["meta_info"]["input_token_logprobs"][-len(o) :]
            assert [e[1] for e in entries] == list(o), "replay tail ids must equal the output ids"
            tails.append([e[0] for e in entries])
        return tails

    def _score(self, batch, res, prompt_lens) -> HelperResult:
        outs = [r["output_ids"] for r in res]
        decode_lps = [[e[0] for e in r["meta_info"]["output_token_logprobs"]] for r in res]
        cached = [r["meta_info"]["cached_tokens"] for r in res]
        prefill_lps = self.replay(batch, outs)
        return HelperResult(
            [k3(a, b) for a, b in zip(prefill_lps, decode_lps, strict=True)], cached, prompt_lens
        )

    def match(self, prompts: Sequence[Sequence[int]], n: int = 24) -> HelperResult:
        self.flush()
        res = self.decode_batch(prompts, n)
        return self._score(prompts, res, [len(p) for p in prompts])

    def prefill_cache_hit(self, prompts: Sequence[Sequence[int]], n: int = 24) -> HelperResult:
        self.flush()
        self.generate(
            {
                "input_ids": [list(p) for p in prompts],
                "sampling_params": {**GREEDY, "max_new_tokens": 0},
            }
        )
        res = self.decode_batch(prompts, n)
        return self._score(prompts, res, [len(p) for p in prompts])

    def decode_cache_hit(self, prompts: Sequence[Sequence[int]], n: int = 24) -> HelperResult:
        self.flush()
        turn1 = self.decode_batch(prompts, n)
        comma = self.tokenize([","])[0][1:]  # drop the BOS the tokenizer adds
        turn2 = [list(p) + r["output_ids"] + comma for p, r in zip(prompts, turn1, strict=True)]
        res = self.decode_batch(turn2, n)
        return self._score(turn2, res, [len(p) for p in prompts])
