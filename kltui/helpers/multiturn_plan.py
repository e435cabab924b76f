"""What a `multiturn` run sends, built the way SGLang's `unified_radix_cache_kit` builds it
(0.5.23, `test_multiturn_prefill_cache_hit_branching`), as pure data.

Groups x branches conversations share one prefix per group (the first `prefix` ids of the
group's prompt from the prompt set, `input_ids[g][:prefix_len]`); branch b adds
`branch_suffix + b * branch_step` random ids (`random.Random(456)`, drawn group by group, branch
by branch); turn t > 0 adds `turn_suffixes[t-1]` random ids per conversation
(`_random_suffixes(n, 512, seed=789)`, `(n, 256, seed=890)`). The kit draws ids in [1, 30000];
kltui draws them in [1, min(30000, vocab - 1)], because an id past the server's vocabulary is
no token (the shipped reference model has 1024): with a vocabulary above 30000 the ids are the
kit's own, id for id.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

# the kit's seeds: the branch suffixes, then one per later turn (seeds past the kit's two turn
# suffixes continue from the last)
BRANCH_SEED = 456
TURN_SEEDS = (789, 890)
KIT_MAX_ID = 30000


@dataclass(frozen=True)
class MultiturnShape:
    """The run's shape; every default is the kit's (`UnifiedRadixTreeTestMixin`)."""

    groups: int = 3
    branches: int = 3
    prefix: int = 512
    branch_suffix: int = 256
    branch_step: int = 64
    turn_suffixes: tuple[int, ...] = (512, 256)
    interleave: bool = True  # later turns submitted g0b0, g1b0, g2b0, g0b1, ...
    replay_batch: int = 1  # replays per request (the kit's replay_batch_size)
    temperature: float = 1.0  # the kit's sampling_temperature
    sampling_seed: int = 42  # SGLang's default per request under deterministic inference

    @property
    def conversations(self) -> int:
        """groups x branches."""
        return self.groups * self.branches

    @property
    def turns(self) -> int:
        """Turn 0 on the prefill hit, then one per turn suffix."""
        return 1 + len(self.turn_suffixes)

    def to_json(self) -> dict[str, Any]:
        """The settings HelperStarted records."""
        return {
            "groups": self.groups,
            "branches": self.branches,
            "prefix": self.prefix,
            "branch_suffix": self.branch_suffix,
            "branch_step": self.branch_step,
            "turn_suffixes": list(self.turn_suffixes),
            "interleave": self.interleave,
            "replay_batch": self.replay_batch,
            "temperature": self.temperature,
            "sampling_seed": self.sampling_seed,
        }


@dataclass(frozen=True)
class Plan:
    """Every id a run sends before the model answers: per conversation (group-major) its warmed
    prefix and turn-0 input, per later turn each conversation's suffix."""

    prefixes: list[list[int]]
    firsts: list[list[int]]
    turn_suffixes: list[list[list[int]]]  # [turn - 1][conversation]
    max_id: int  # ids drawn in [1, max_id]


def random_suffixes(n: int, length: int, seed: int, max_id: int) -> list[list[int]]:
    """The kit's `_random_suffixes`, ids capped at `max_id`."""
    rng = random.Random(seed)
    return [[rng.randint(1, max_id) for _ in range(length)] for _ in range(n)]


def build_plan(shape: MultiturnShape, prompts: list[list[int]], vocab: int) -> Plan:
    """The kit's ids for `shape`, prefixes from `prompts` (one per group), random ids below
    `vocab`."""
    if len(prompts) < shape.groups:
        raise ValueError(
            f"multiturn needs one prompt per group: {shape.groups} groups, "
            f"{len(prompts)} prompt(s) (raise --samples)"
        )
    max_id = max(1, min(KIT_MAX_ID, vocab - 1))
    rng = random.Random(BRANCH_SEED)
    prefixes, firsts = [], []
    for g in range(shape.groups):
        prefix = list(prompts[g][: shape.prefix])
        for b in range(shape.branches):
            n = shape.branch_suffix + b * shape.branch_step
            suffix = [rng.randint(1, max_id) for _ in range(n)]
            prefixes.append(list(prefix))
            firsts.append(prefix + suffix)
    n = shape.conversations
    seeds = [*TURN_SEEDS, *range(TURN_SEEDS[-1] + 1, TURN_SEEDS[-1] + len(shape.turn_suffixes))]
    turns = [
        random_suffixes(n, length, seed, max_id)
        for length, seed in zip(shape.turn_suffixes, seeds, strict=False)
    ]
    return Plan(prefixes, firsts, turns, max_id)


def interleave_order(n: int, branches: int) -> list[int] | None:
    """The kit's `_interleave_order`: [g0b0, g1b0, ..., g0b1, g1b1, ...], None when there is
    nothing to interleave."""
    if branches <= 0 or branches >= n:
        return None
    groups = n // branches
    order = [g * branches + b for b in range(branches) for g in range(groups)]
    order += range(groups * branches, n)
    return order


def where(shape: MultiturnShape, sample: int) -> tuple[int, int, int]:
    """(group, branch, turn) of a sample index (conversation-major, then turn)."""
    conv, turn = divmod(sample, shape.turns)
    group, branch = divmod(conv, shape.branches)
    return group, branch, turn


def sample_of(shape: MultiturnShape, conversation: int, turn: int) -> int:
    """The sample index of one conversation's turn."""
    return conversation * shape.turns + turn
