"""Servers and prompts for the stateful archs' tests (--arch mamba / swa): prompts of exact
lengths cut from the corpus, and the shared servers by their flags."""

from __future__ import annotations

from pathlib import Path

from kltui.reference import CHECKPOINT_DIR
from kltui.reference.launcher import ReferenceServer
from tests.reference.kit import RefClient
from tests.servers import ReferenceServers

CORPUS = CHECKPOINT_DIR.parent / "corpus.txt"


def serve(pool: ReferenceServers, *flags: str, deterministic: bool = True) -> ReferenceServer:
    """The session's shared server with these extra flags, sampling with seed 0."""
    return pool.server(random_seed=0, deterministic=deterministic, extra_args=tuple(flags))


def prompts(client: RefClient, lengths: list[int]) -> list[list[int]]:
    """BOS + corpus text, one prompt of each length, each from its own offset."""
    ids = client.tokenize([Path(CORPUS).read_text()[:5000]])[0]
    return [[0, *ids[1 + 37 * i : 1 + 37 * i + n - 1]] for i, n in enumerate(lengths)]


def exact(values: list[float]) -> bool:
    return all(v == 0.0 for v in values)
