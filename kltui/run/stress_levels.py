"""The named `--stress` levels (run/stress.py sends them): data only, so that `kltui --help` and
loading a config file import no HTTP client."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StressLevel:
    """One named level: how much traffic, bounded how."""

    name: str
    concurrency: int  # requests in flight at once; 0: the server's max_running_requests + 8
    requests: int  # at most this many requests in the whole run
    seconds: float  # at most this long sending, from the first helper's start
    long_pool: float  # a long prompt's share of the KV pool (max_total_tokens)
    long_max: int  # ... and at most this many tokens
    # the squeeze before prefill_cache_hit's hits: at most this many tokens in all (a pool
    # that needs more is not squeezed at this level, and the tick says so)
    squeeze_max: int
    help: str


LEVELS: dict[str, StressLevel] = {
    lvl.name: lvl
    for lvl in (
        StressLevel(
            "light",
            4,
            200,
            120.0,
            0.1,
            512,
            8192,
            "4 requests in flight, at most 200 requests and 120 s; long prompts 10% of the pool "
            "(at most 512 tokens); a squeeze of at most 8192 tokens",
        ),
        StressLevel(
            "moderate",
            16,
            800,
            300.0,
            0.25,
            8192,
            262144,
            "16 in flight, at most 800 requests and 300 s; long prompts 25% of the pool (at most "
            "8192 tokens); a squeeze of at most 262144 tokens",
        ),
        StressLevel(
            "heavy",
            0,
            3000,
            600.0,
            0.45,
            32768,
            4194304,
            "max_running_requests + 8 in flight (the scheduler queues and retracts), at most "
            "3000 requests and 600 s; long prompts 45% of the pool (at most 32768 tokens); a "
            "squeeze of at most 4194304 tokens",
        ),
    )
}


def levels_help() -> str:
    """The levels as one line each, for --help and the docs."""
    return "; ".join(f"{lvl.name}: {lvl.help}" for lvl in LEVELS.values())
