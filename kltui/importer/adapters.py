"""What verl and slime write, read as kltui-rl records (their field names, docs/RL.md).

Checked against the owners' code, not guessed:
- verl 0.9.1 (PyPI wheel; verl/trainer/ppo/rollout_corr_helper.py, ray_trainer.py,
  verl/utils/debug/metrics.py): a training batch (`DataProto.batch`) holds per sample
  `prompts` (left-padded), `responses` (right-padded), `attention_mask` over prompt + response,
  `response_mask` (0 on padding and on tool output in multi-turn), `old_log_probs` (the
  trainer's recomputation) and `rollout_log_probs` (the rollout engine's). verl dumps the
  batch only as a pickled DataProto (`save_to_disk`), which needs verl, ray and tensordict to
  load and runs code when loaded; kltui reads the same tensors as JSONL or Parquet rows under
  those key names instead (docs/RL.md shows the five lines that write them).
- slime v0.3.1 (THUDM/slime 624b824, slime/observability/train_data_utils.py, slime/ray/
  rollout.py, slime/utils/types.py): `--save-debug-train-data` (or `--dump-details DIR`,
  `DIR/train_data/{rollout_id}.pt`) writes `{"format_version": 2, "samples": [...]}` with per
  sample `tokens` (prompt + response), `response_lengths`, `loss_masks`, `log_probs` (the
  trainer's) and `rollout_log_probs`; `--save-debug-rollout-data` writes Sample dicts with
  `tokens`, `response_length`, `loss_mask` and `rollout_log_probs` but no trainer logprobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kltui.importer.schema import (
    FORMAT,
    Invalid,
    Record,
    check,
    float_array,
    int_array,
    optional_id,
    optional_step,
)

VERL_VERSION = "verl 0.9.1"
SLIME_VERSION = "slime v0.3.1 (624b824)"
SLIME_FORMAT_VERSIONS = (2,)

VERL_KEYS = ("responses", "old_log_probs", "rollout_log_probs")
SLIME_KEYS = ("tokens", "log_probs", "rollout_log_probs")
SLIME_ROLLOUT_KEYS = ("tokens", "rollout_log_probs", "response_length")


def _get(obj: Mapping[str, Any], key: str) -> Any:
    if key not in obj or obj[key] is None:
        raise Invalid(key, "is missing")
    return obj[key]


def _plain(value: Any) -> Any:
    """A tensor (slime's .pt dumps) as a numpy array; anything else as it is."""
    numpy = getattr(value, "numpy", None)
    if callable(numpy) and hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return value


def _int(value: Any, name: str) -> int:
    value = _plain(value)
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise Invalid(name, f"must be an integer, got {value!r:.40}")
    return int(value)


def kltui_record(obj: Mapping[str, Any], index: int) -> Record:
    """A kltui-rl record (schema.py)."""
    mask = obj.get("loss_mask")
    return check(
        index,
        int_array(obj.get("prompt_ids", []), "prompt_ids"),
        int_array(_get(obj, "response_ids"), "response_ids"),
        float_array(_get(obj, "rollout_logprobs"), "rollout_logprobs"),
        float_array(_get(obj, "trainer_logprobs"), "trainer_logprobs"),
        None if mask is None else int_array(mask, "loss_mask"),
        sample_id=optional_id(obj.get("id")),
        step=optional_step(obj.get("step")),
    )


def _last_one(mask: np.ndarray) -> int:
    hits = np.flatnonzero(mask)
    return int(hits[-1]) + 1 if hits.size else 0


def verl_record(obj: Mapping[str, Any], index: int) -> Record:
    """One row of a verl batch: padding stripped by attention_mask (else by response_mask),
    response_mask as the loss mask, as verl's compute_offpolicy_metrics masks."""
    responses = int_array(_plain(_get(obj, "responses")), "responses")
    old = float_array(_plain(_get(obj, "old_log_probs")), "old_log_probs")
    roll = float_array(_plain(_get(obj, "rollout_log_probs")), "rollout_log_probs")
    width = responses.size
    for arr, name in ((old, "old_log_probs"), (roll, "rollout_log_probs")):
        if arr.size != width:
            raise Invalid(name, f"has {arr.size} entries for {width} responses")
    prompts = int_array(_plain(obj.get("prompts", [])), "prompts")
    plen = prompts.size
    rmask = obj.get("response_mask")
    rmask_arr = None if rmask is None else int_array(_plain(rmask), "response_mask")
    if rmask_arr is not None and rmask_arr.size != width:
        raise Invalid("response_mask", f"has {rmask_arr.size} entries for {width} responses")
    amask = obj.get("attention_mask")
    if amask is not None:
        att = int_array(_plain(amask), "attention_mask")
        if att.size != plen + width:
            raise Invalid(
                "attention_mask", f"has {att.size} entries for {plen} prompts + {width} responses"
            )
        # left padding of the prompt, right padding of the response (verl's layout)
        prompts = prompts[att[:plen] != 0]
        n = _last_one(att[plen:])
    elif rmask_arr is not None:
        n = _last_one(rmask_arr)
    else:
        n = width
    if n == 0:
        raise Invalid(
            "response_mask" if rmask_arr is not None else "attention_mask",
            f"covers none of the {width} response positions",
        )
    step = obj.get("step", obj.get("global_steps"))
    return check(
        index,
        prompts,
        responses[:n],
        roll[:n],
        old[:n],
        None if rmask_arr is None else rmask_arr[:n],
        names=("responses", "rollout_log_probs", "old_log_probs", "response_mask"),
        sample_id=optional_id(obj.get("uid")),
        step=optional_step(step),
    )


def slime_record(obj: Mapping[str, Any], index: int) -> Record:
    """One sample of a slime train dump (format_version 2): tokens = prompt + response, the
    last `response_lengths` of them generated; `loss_masks` as slime's loss mask."""
    if "log_probs" not in obj and "response_length" in obj:
        raise Invalid(
            "log_probs",
            "is missing: this is a rollout dump (--save-debug-rollout-data), which has no "
            "trainer logprobs; import the train dump (--save-debug-train-data) of that rollout",
        )
    tokens = int_array(_plain(_get(obj, "tokens")), "tokens")
    n = _int(_get(obj, "response_lengths"), "response_lengths")
    if not 0 < n <= tokens.size:
        raise Invalid("response_lengths", f"is {n} for {tokens.size} tokens")
    mask = obj.get("loss_masks")
    ident = obj.get("rollout_position", obj.get("sample_index"))
    return check(
        index,
        tokens[: tokens.size - n],
        tokens[tokens.size - n :],
        float_array(_plain(_get(obj, "rollout_log_probs")), "rollout_log_probs"),
        float_array(_plain(_get(obj, "log_probs")), "log_probs"),
        None if mask is None else int_array(_plain(mask), "loss_masks"),
        names=("tokens", "rollout_log_probs", "log_probs", "loss_masks"),
        sample_id=None if ident is None else str(_int(ident, "rollout_position")),
        step=None if obj.get("rollout_id") is None else _int(obj["rollout_id"], "rollout_id"),
    )


ADAPTERS: dict[str, Callable[[Mapping[str, Any], int], Record]] = {
    FORMAT: kltui_record,
    "verl": verl_record,
    "slime": slime_record,
}
CHECKED_AGAINST = {FORMAT: f"{FORMAT}/1", "verl": VERL_VERSION, "slime": SLIME_VERSION}


def sniff(keys: set[str] | Mapping[str, Any]) -> str | None:
    """The adapter whose field names a record without a header has (None: none fits)."""
    have = set(keys)
    if set(VERL_KEYS) <= have:
        return "verl"
    if set(SLIME_KEYS) <= have or set(SLIME_ROLLOUT_KEYS) <= have:
        return "slime"
    return None
