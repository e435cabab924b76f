"""A server's diagnosis as every front end reads it: `Diagnosis`, the typed finding with what
it rests on and its words, and `Verdicts`, the one way the decision builds one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kltui.readings.findings import Basis, Finding, Kind
from kltui.readings.limit import Limit


@dataclass(frozen=True)
class Diagnosis:
    """One server's verdict on conditions 1 and 2: the finding, what it rests on, its words
    (label, evidence) and the next step."""

    server: str
    finding: Finding
    condition: int | None  # 0 both hold, 1 or 2 the one to fix first, None inconclusive
    label: str
    # every condition the evidence shows broken ([1, 2] when both)
    conditions: list[int] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)
    next_step: str | None = None
    # the exact command of the next step, and what the TUI can open for it ("dumps")
    next_command: str | None = None
    action: str | None = None
    basis: Basis = field(default_factory=Basis)
    # what a clean or condition-1 reading rules out, per cache path (readings/limit.py)
    limits: tuple[Limit, ...] = ()

    @property
    def kind(self) -> Kind:
        """The conditions shown broken, as a key for styles and labels."""
        if self.condition is None:
            return Kind.UNKNOWN
        if self.condition == 0:
            return Kind.EXACT
        return Kind("+".join(str(c) for c in self.conditions))

    @property
    def kernels_shown(self) -> bool:
        """Match's divergence is read as the kernels' (condition 1) and no state bug is named:
        condition 1 decided, or decided on match with condition 2 left open for want of power.
        The kernels' own next step (the dumper drill-down) applies to both."""
        return self.condition == 1 or self.finding is Finding.NOT_EXCLUDED

    # the names the first reports used
    @property
    def headline(self) -> str:
        """The label (the name the first reports used)."""
        return self.label

    @property
    def details(self) -> list[str]:
        """The evidence (the name the first reports used)."""
        return self.evidence

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (docs/JSON.md `diagnosis`)."""
        return {
            "server": self.server,
            "condition": self.condition,
            "conditions": list(self.conditions),
            "finding": str(self.finding),
            "label": self.label,
            "evidence": list(self.evidence),
            "suspects": list(self.suspects),
            "next_step": self.next_step,
            "next_command": self.next_command,
            "action": self.action,
            "rests_on": self.basis.to_json(),
            "limits": [lim.to_json() for lim in self.limits],
        }


class Verdicts:
    """Builds one server's Diagnosis for a finding, the basis folded in: the condition comes
    from the finding's kind, never from the words."""

    def __init__(self, server: str, basis: Basis) -> None:
        self.server, self.basis = server, basis

    def __call__(
        self,
        finding: Finding,
        label: str,
        evidence: list[str],
        *,
        conditions: tuple[int, ...] = (),
        condition: int | None = None,
        suspects: list[str] | None = None,
        next_step: str | None = None,
        next_command: str | None = None,
        action: str | None = None,
        limits: tuple[Limit, ...] = (),
    ) -> Diagnosis:
        return Diagnosis(
            server=self.server,
            finding=finding,
            condition=condition,
            conditions=list(conditions),
            label=label,
            evidence=evidence,
            suspects=suspects or [],
            next_step=next_step,
            next_command=next_command,
            action=action,
            basis=self.basis,
            limits=limits,
        )
