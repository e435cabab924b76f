"""`kltui import --gate NAME<=VALUE`: conditions on the import's metrics for CI.

NAME is one of kltui's figures (`avg_kl_div`, `token_mean_k3`, `tail_fraction`), a verl
metric (`k3_kl`, `rollout_corr/k3_kl` or `verl.k3_kl`) or a slime metric (`mis_kl`,
`slime.mis_rs_catastrophic_seq_fraction`, `train_rollout_logprob_abs_diff`). A gate passes
when the value is finite and within its bound.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kltui.errors import UsageError

_GATE = re.compile(r"^\s*([A-Za-z0-9_./]+)\s*(<=|<)\s*([-+0-9.eE]+|inf)\s*$")
KLTUI_FIGURES = ("avg_kl_div", "token_mean_k3", "tail_fraction", "max_k3")


@dataclass(frozen=True)
class Gate:
    """One condition: a metric, `<` or `<=`, a bound."""

    name: str
    op: str
    bound: float

    @property
    def text(self) -> str:
        """The condition as written."""
        return f"{self.name}{self.op}{self.bound:g}"


def parse_gate(text: str) -> Gate:
    """A --gate value; UsageError naming it when it is not NAME<=VALUE or NAME<VALUE."""
    m = _GATE.match(text)
    if not m:
        raise UsageError(f"--gate {text!r}: write NAME<=VALUE or NAME<VALUE, e.g. k3_kl<=1e-3")
    try:
        bound = float(m.group(3))
    except ValueError:
        raise UsageError(f"--gate {text!r}: {m.group(3)!r} is not a number") from None
    return Gate(m.group(1), m.group(2), bound)


def metric_table(summary: dict, verl: dict, slime: dict) -> dict[str, float]:
    """Every name a gate may use, with its value."""
    table: dict[str, float] = {}
    for k in KLTUI_FIGURES:
        v = summary.get(k)
        if isinstance(v, int | float):
            table[k] = float(v)
    for k, v in verl.items():
        table[k] = table[f"verl.{k}"] = table[f"rollout_corr/{k}"] = v
    for k, v in slime.items():
        table.setdefault(k, v)
        table[f"slime.{k}"] = v
    return table


def known_names() -> dict[str, float]:
    """Every metric name a gate may use (evaluated on one made-up sequence)."""
    import numpy as np

    from kltui.metrics.rl import sequence_sums, slime_metrics, verl_metrics

    one = sequence_sums([np.zeros(1)], [np.zeros(1)], [np.ones(1, dtype=bool)], [None])
    return metric_table({k: 0.0 for k in KLTUI_FIGURES}, verl_metrics(one), slime_metrics(one))


def check_gate_names(gates: list[Gate]) -> None:
    """UsageError for a gate on a metric that does not exist, before any file is read."""
    check_names(gates, known_names())


def check_names(gates: list[Gate], table: dict[str, float]) -> None:
    """UsageError for a gate on a metric that does not exist."""
    for g in gates:
        if g.name not in table:
            raise UsageError(
                f"--gate {g.text}: no metric {g.name!r}; known: {', '.join(sorted(table))}"
            )


def evaluate(gates: list[Gate], table: dict[str, float]) -> list[dict]:
    """Each gate's value and whether it passed, as JSON."""
    out = []
    for g in gates:
        value = table.get(g.name, math.nan)
        ok = math.isfinite(value) and (value <= g.bound if g.op == "<=" else value < g.bound)
        out.append({"gate": g.text, "metric": g.name, "value": value, "passed": ok})
    return out
