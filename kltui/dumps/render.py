"""The analysis as printed: the module table of the decode step that diverges first (or of the
last aligned step when none does), then the per-step and prefill summaries. Module names come
from files and are shown literally."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from kltui.dumps.compare import EQUALITY
from kltui.untrusted import escape_controls

STATUS_STYLE = {
    "first-divergent": "bold red",
    "first-differing": "bold magenta",
    "inherited": "yellow",
    "identical": "green",
    "not-aligned": "dim",
}


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return "0" if x == 0 else f"{x:.3e}"


def _yn(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "NO")


def module_table(modules: list[dict], title: str | None = None) -> Table:
    """The per-module comparison as a Rich table."""
    t = Table(title=title, expand=False, header_style="bold", box=None, pad_edge=False)
    t.add_column("#", justify="right")
    t.add_column("module", overflow="fold")
    t.add_column("status")
    t.add_column("inputs =")
    t.add_column("output =")
    t.add_column("max |diff|", justify="right")
    t.add_column("position", justify="right")
    for i, m in enumerate(modules, 1):
        t.add_row(
            str(i),
            Text(escape_controls(str(m["module"]))),
            Text(m["status"], style=STATUS_STYLE.get(m["status"], "")),
            _yn(m["inputs_identical"]),
            _yn(m["output_identical"]),
            _fmt(m["max_abs_diff"]),
            "-" if m["position"] is None else str(m["position"]),
        )
    return t


def steps_table(steps: list[dict]) -> Table:
    """The per-decode-step comparison as a Rich table."""
    t = Table(title="decode steps", header_style="bold", box=None, pad_edge=False)
    for col in ("step", "position", "identical", "max |diff|", "first divergent module"):
        t.add_column(col)
    for s in steps:
        t.add_row(
            str(s["decode_step"]),
            str(s["position"]),
            _yn(s["identical"]),
            _fmt(s["max_abs_diff"]),
            Text(escape_controls(_step_module(s))),
        )
    return t


def _step_module(s: dict) -> str:
    if s["first_divergent_module"]:
        return str(s["first_divergent_module"])
    return "-" if s["identical"] else "(cannot be named: inputs not proven identical)"


def _first(mods: list[dict]) -> int:
    return next(
        i for i, m in enumerate(mods) if m["status"] in ("first-divergent", "first-differing")
    )


def print_result(console, r: dict, *, full: bool = False) -> None:
    """Print an analysis result to the console."""
    lines = [
        f"A (decode run): {r['dir_a']}",
        f"B (fresh prefill): {r['dir_b']}",
        f"prompt {r['prompt_tokens']} tokens, {r['aligned_steps']} aligned decode steps, "
        f"fresh prefill M={r['fresh_prefill_tokens']}, rank {r['rank']} of {r['ranks']}",
        f"alignment: input ids bit-identical, embedding output ({r['embedding_module']}) "
        "bit-identical",
        f"compared: {EQUALITY}",
    ]
    console.print(Text("\n".join(escape_controls(line) for line in lines)))
    step = r["decode_step"]
    title = (
        f"modules at decode step {step} (position {r['position']})"
        if step is not None
        else "modules at the last aligned decode step"
    )
    mods = r["modules"]
    if not full and step is not None:
        # The identical prefix is long on real models; keep the first divergent module's
        # neighbourhood and everything after it.
        mods = mods[max(0, _first(mods) - 3) :]
    console.print(module_table(mods, title))
    console.print(steps_table(r["steps"]))
    pre = r["prefill"]
    if not pre["identical"]:
        pmods = pre["modules"]
        if not full:
            pmods = pmods[max(0, _first(pmods) - 3) :]
        console.print(
            module_table(pmods, f"prompt prefill M={pre['m_prompt']} vs M={pre['m_fresh']}")
        )
    console.print(
        Text(
            escape_controls(r["verdict"]), style="bold red" if not r["identical"] else "bold green"
        )
    )
