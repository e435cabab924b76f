"""A server's diagnosis as every front end reads it: `Diagnosis`, the typed finding with the
figures of its headline, its evidence records, suspects and next step, and what it rests on;
and `Verdicts`, the one way the decision builds one. The words are `kltui/words/diagnosis.py`."""

from __future__ import annotations

from dataclasses import dataclass, field

from kltui.readings.diagnosis_parts import Command, Headline, Line, Step, Suspect
from kltui.readings.findings import Basis, Finding, Kind
from kltui.readings.imported import ImportFinding
from kltui.readings.limit import Limit


@dataclass(frozen=True)
class Diagnosis:
    """One server's verdict on conditions 1 and 2: the finding and its figures, the evidence
    records, the suspects, the next step and its command, and what it rests on."""

    server: str
    finding: Finding
    condition: int | None  # 0 both hold, 1 or 2 the one to fix first, None inconclusive
    headline: Headline = field(default_factory=Headline)
    # every condition the evidence shows broken ([1, 2] when both)
    conditions: list[int] = field(default_factory=list)
    evidence: tuple[Line, ...] = ()
    suspects: tuple[Suspect, ...] = ()
    step: Step | None = None
    # the exact command of the next step, and what the TUI can open for it ("dumps")
    command: Command | None = None
    action: str | None = None
    basis: Basis = field(default_factory=Basis)
    # what a clean or condition-1 reading rules out, per cache path (readings/limit.py)
    limits: tuple[Limit, ...] = ()
    # an imported file's reading (Finding.IMPORTED; None for one recorded as words)
    imported: ImportFinding | None = None

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


class Verdicts:
    """Builds one server's Diagnosis for a finding, the basis folded in: the condition comes
    from the finding's kind, never from the words."""

    def __init__(self, server: str, basis: Basis) -> None:
        self.server, self.basis = server, basis

    def __call__(
        self,
        finding: Finding,
        headline: Headline,
        evidence: list[Line],
        *,
        conditions: tuple[int, ...] = (),
        condition: int | None = None,
        suspects: list[Suspect] | None = None,
        step: Step | None = None,
        command: Command | None = None,
        action: str | None = None,
        limits: tuple[Limit, ...] = (),
    ) -> Diagnosis:
        return Diagnosis(
            server=self.server,
            finding=finding,
            condition=condition,
            headline=headline,
            conditions=list(conditions),
            evidence=tuple(evidence),
            suspects=tuple(suspects or ()),
            step=step,
            command=command,
            action=action,
            basis=self.basis,
            limits=limits,
        )
