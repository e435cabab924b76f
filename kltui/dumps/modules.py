"""One pass, module by module: each module call's rows in A against the same rows in B, and
the table the analysis reports.

A module is named as the op (`first-divergent`) only when it is the first whose output differs
and its inputs are proven identical: every input tensor it was called with compared bit-equal on
both sides, here and in every earlier pass of the table's context (what a module reads from
earlier passes, the KV cache, is written from its inputs there). The first differing output
whose inputs differ or were not compared is `first-differing`: no module is named."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kltui.dumps.compare import RowDiff, diff_rows
from kltui.dumps.files import DumpError, Loader
from kltui.dumps.passes import (
    Entry,
    Pass,
    row_of,
)


@dataclass
class ModuleRow:
    """One module's comparison across the aligned passes."""

    module: str
    order: int
    status: str = "not-aligned"
    inputs_identical: bool | None = None
    output_identical: bool | None = None
    max_abs_diff: float = 0.0
    position: int | None = None
    differing_inputs: list[str] = field(default_factory=list)
    # inputs that could not be compared (not dumped, or not one row per token); not in the JSON
    uncompared_inputs: list[str] = field(default_factory=list)
    differing_earlier: list[str] = field(default_factory=list)  # in earlier passes, as labelled
    dumped_inputs: int = 0

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object."""
        return {
            "module": self.module,
            "status": self.status,
            "inputs_identical": self.inputs_identical,
            "output_identical": self.output_identical,
            "max_abs_diff": self.max_abs_diff,
            "position": self.position,
            "differing_inputs": self.differing_inputs,
        }


def merge_diffs(a: RowDiff | None, b: RowDiff | None) -> RowDiff | None:
    """The combined difference of two row comparisons (either may be None)."""
    if a is None or b is None:
        return a or b
    worst = a if (a.max_abs_diff >= b.max_abs_diff or b.max_abs_diff != b.max_abs_diff) else b
    firsts = [x for x in (a.first_position, b.first_position) if x is not None]
    return RowDiff(
        a.identical and b.identical,
        worst.max_abs_diff,
        worst.position,
        min(firsts) if firsts else None,
        a.rows + b.rows,
    )


def compare_pass(
    loader: Loader, pa: Pass, positions: list[int], map_b: dict
) -> dict[tuple, RowDiff | None]:
    """{entry key: RowDiff, or None where no row of the entry is laid out per token}."""
    torch = loader.torch
    out: dict[tuple, RowDiff | None] = {}
    for key, ea in pa.entries.items():
        va = loader.value(ea.file)
        if not isinstance(va, torch.Tensor):
            out[key] = None
            continue
        ra, rb_rows, used = [], [], []
        for pos in positions:
            row_a = row_of(va, pa, pos)
            if row_a is None:
                continue
            pb, _ = map_b[pos]
            eb = pb.entries.get(key)
            if eb is None:
                raise DumpError(
                    f"mismatched folders: {ea.label} of step {pa.step} in A has no counterpart "
                    f"in step {pb.step} of B"
                )
            vb = loader.value(eb.file)
            row_b = row_of(vb, pb, pos) if isinstance(vb, torch.Tensor) else None
            if row_b is None:
                continue
            ra.append(row_a)
            rb_rows.append(vb[row_b])
            used.append(pos)
        if not used:
            out[key] = None
            continue
        a = va.index_select(0, torch.tensor(ra, dtype=torch.long))
        b = torch.stack(rb_rows)
        out[key] = diff_rows(torch, a, b, used, f"{ea.label} (step {pa.step})")
    return out


def _calls(pa: Pass) -> list[dict[str, list[Entry]]]:
    """Entries grouped per module call. A pre-hook writes a call's inputs, the post-hook its
    outputs after every child's; the module's own output can lack the layer_id tag its inputs
    carry (the ctx hook clears it first), so calls are paired by nesting, not by tags."""
    calls: list[dict[str, list[Entry]]] = []
    open_calls: dict[str, list[dict]] = {}
    last: tuple[str, str, dict] | None = None
    for e in pa.entries.values():
        kind = "in" if e.kind == "input" else "out"
        if last is not None and last[0] == e.module and last[1] == kind and e.kind != "dump":
            call = last[2]
        elif kind == "in":
            call = {"in": [], "out": []}
            calls.append(call)
            open_calls.setdefault(e.module, []).append(call)
        elif open_calls.get(e.module):
            call = open_calls[e.module].pop()
        else:
            call = {"in": [], "out": []}
            calls.append(call)
        call[kind].append(e)
        last = (e.module, kind, call)
    return calls


def module_table(
    pa: Pass, diffs: dict, earlier: list[tuple[str, dict]] | tuple = ()
) -> list[ModuleRow]:
    """Modules in the order their outputs were written, each with its verdict. `earlier` holds
    (label, diffs) of the passes before `pa` whose state it may read (a decode step's prompt
    prefill and earlier steps): a module's inputs there are its inputs too."""
    # a call that returned nothing dumpable has no verdict
    rows = [_module_row(g, diffs, earlier) for g in _calls(pa) if g["out"]]
    rows.sort(key=lambda r: r.order)
    _mark_statuses(rows)
    return rows


def _module_row(g: dict, diffs: dict, earlier: list[tuple[str, dict]] | tuple) -> ModuleRow:
    """One call's row: its inputs compared in this pass and the earlier ones, its outputs'
    differences merged."""
    row = ModuleRow(_call_label(g), g["out"][0].file.dump_index)
    row.dumped_inputs = len(g["in"])
    for where, ds in [("", diffs), *earlier]:
        for e in g["in"]:
            d = ds.get(e.key)
            label = f"{e.label} ({where})" if where else e.label
            if d is None:
                row.uncompared_inputs.append(label)
            elif not d.identical:
                row.differing_inputs.append(label)
                if where:
                    row.differing_earlier.append(label)
    if row.differing_inputs:
        row.inputs_identical = False
    elif g["in"] and not row.uncompared_inputs:
        row.inputs_identical = True
    outs = [diffs.get(e.key) for e in g["out"]]
    merged = None
    for d in outs:
        merged = merge_diffs(merged, d)
    if merged is not None:
        row.output_identical = merged.identical
        row.max_abs_diff = merged.max_abs_diff
        row.position = merged.position
    return row


def _mark_statuses(rows: list[ModuleRow]) -> None:
    """Each compared row's status, in order: identical, the first that differs (divergent when
    its inputs are identical), or inherited from it."""
    culprit = None
    for r in rows:
        if r.output_identical is None:
            continue
        if r.output_identical:
            r.status = "identical"
        elif culprit is None:
            culprit = r
            r.status = "first-divergent" if r.inputs_identical else "first-differing"
        else:
            r.status = "inherited"


def first_differing(table: list[ModuleRow]) -> ModuleRow | None:
    """The first module whose output differs (named as the op or not)."""
    return next((r for r in table if r.status in FIRST), None)


FIRST = ("first-divergent", "first-differing")


def unnamed_reason(row: ModuleRow | None, prefill_op: str | None = None) -> str | None:
    """Why the first differing module is not named as the op, and what would decide it; None
    when it is named (or nothing differs). `prefill_op` is the prompt prefill's own first
    divergent module, when the reason is what decode read from that prefill."""
    if row is None or row.status != "first-differing":
        return None
    mod = row.module
    head = f"the first divergent module cannot be named: {mod} is the first output that differs"
    before = row.differing_earlier
    here = [x for x in row.differing_inputs if x not in before]
    if here:
        return (
            f"{head}, but its inputs differ already ({_few(here)}) though no earlier module's "
            "output does: the difference arises in code between hooks, before it is called; "
            f"what would decide it: dump the tensors in between (a dumper.dump call in the model "
            f"code before {mod})"
        )
    if before:
        fix = (
            f"make the prompt's prefill M-invariant at {prefill_op} (`kltui probe-ops` shows "
            "whether that kernel is M-variant) and capture again"
            if prefill_op
            else "a capture in which the prompt's prefill is M-invariant, so that what decode "
            "reads is proven identical"
        )
        return (
            f"{head}; its inputs at this step are bit-identical, but its inputs at earlier "
            f"passes differ already ({_few(before)}): what it reads from them (the KV cache, "
            "written from those inputs) differs, so it may only inherit that difference; what "
            f"would decide it: {fix}"
        )
    if row.dumped_inputs == 0:
        what = "its inputs were not dumped"
    else:
        what = f"inputs of it were not compared ({_few(row.uncompared_inputs)}: not dumped "
        what += "one row per token)"
    return (
        f"{head}, but {what}, so they are not proven identical; what would decide it: dump its "
        "input tensors (DUMPER_NON_INTRUSIVE_MODE=all hooks every module's tensor arguments; a "
        "dumper.dump call in the model code for the others), or read the module before it"
    )


def _few(names: list[str], n: int = 3) -> str:
    more = f" and {len(names) - n} more" if len(names) > n else ""
    return ", ".join(names[:n]) + more


def _call_label(g: dict) -> str:
    e = g["out"][0]
    label = e.module_label
    # A module shared by every layer (one rotary embedding) is hooked once, under the first
    # layer's name; the layer_id tag says which layer called it.
    lid = dict(e.file.tags).get("layer_id") or next(
        (dict(x.file.tags).get("layer_id") for x in g["in"] if dict(x.file.tags).get("layer_id")),
        None,
    )
    if lid is not None and f"layers.{lid}." not in e.module + ".":
        label += f" (layer {lid})"
    return label
