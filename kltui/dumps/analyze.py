"""Decode vs fresh prefill, module by module (the guide's forward-hook drill-down).

Folder A is the decode run: the prompt's own prefill (M = prompt) then one single-token pass per
decode step. Folder B is one fresh prefill of prompt + the decoded tokens (M = prompt + K).
Decode step k consumes the token at position prompt + k - 1, the same token B's row at that
position consumes, so before any diff is read the input ids and the embedding output of those
rows must be bit-identical; otherwise the rows are misaligned and every later number would be
meaningless. The first module whose output differs is the op only when its inputs are proven
bit-identical (kltui.dumps.modules: here and in the earlier passes whose KV it reads); else no
module is named, and the result says why. Every module after it that differs only inherits
the difference. What the analysis found is a typed verdict (`verdict_of`: kinds and figures);
its words (the JSON's `verdict`) are `words/dumps.py`'s, given to `analyze` by the layer above."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from kltui.dumps.files import DumpError, Loader, index_folder
from kltui.dumps.modules import (
    FIRST,
    compare_pass,
    first_differing,
    merge_diffs,
    module_table,
    unnamed_reason,
)
from kltui.dumps.passes import (
    Pass,
    build_passes,
    check_single_request,
    position_map,
)


class MisalignedError(DumpError):
    """Input ids or embedding rows differ: the rows do not hold the same token (exit 2)."""


def _embedding_key(p: Pass) -> tuple:
    outs = [e for e in p.entries.values() if e.kind == "output"]
    if not outs:
        raise DumpError(
            f"step {p.step} has no module outputs: launch with DUMPER_NON_INTRUSIVE_MODE=all "
            "(the default 'core' writes only input_ids/positions/seq_lens)"
        )
    named = [e for e in outs if "embed" in e.module.rsplit(".", 1)[-1]]
    return (named or outs)[0].key


def _split_a(passes: list[Pass]) -> tuple[list[Pass], list[Pass]]:
    first_decode = next((i for i, p in enumerate(passes) if p.tokens == 1 and i > 0), None)
    if first_decode is None:
        raise DumpError(
            "A has no decode step (a single-token pass after the prompt's prefill): A must be "
            "the decode run's folder and B the fresh prefill's"
        )
    prompt, decode = passes[:first_decode], passes[first_decode:]
    for p in decode:
        if p.tokens != 1:
            raise DumpError(
                f"A: step {p.step} is a {p.tokens}-token pass among the decode steps (another "
                "request ran while dumping?)"
            )
    return prompt, decode


def _check_keys(a: list[Pass], b: list[Pass]) -> None:
    ref = set(b[0].entries)
    for where, passes in (("A", a), ("B", b)):
        for p in passes:
            keys = set(p.entries)
            if keys != ref:
                extra = sorted(keys - ref)
                missing = sorted(ref - keys)
                name = (extra or missing)[0][0]
                side = "only" if extra else "missing"
                raise DumpError(
                    f"mismatched folders: {where} step {p.step} has {len(keys)} dumps, B's first "
                    f"step {len(ref)}; e.g. {name} is {side} there"
                )


def analyze_rank(loader: Loader, pa: list[Pass], pb: list[Pass], rank: int) -> dict:
    """The per-module comparison of decode steps against the fresh prefill on one rank."""
    prompt, decode = _split_a(pa)
    rid_a = check_single_request(pa, "A")
    rid_b = check_single_request(pb, "B")
    # An overlap scheduler runs one more decode pass after the last token is sampled: B's
    # single-token passes after its prefill are decode, not part of the fresh prefill.
    tail = next((i for i, p in enumerate(pb) if p.tokens == 1 and i > 0), len(pb))
    pb, b_extra = pb[:tail], pb[tail:]
    map_b, plen = _check_coverage(prompt, pb)
    m = len(map_b)
    _check_keys(pa, pb)
    emb = _embedding_key(pb[0])
    _check_step_count(decode, m, plen)
    aligned = _aligned_steps(prompt, decode, map_b)
    prefill, prefill_diffs = _prefill_invariance(loader, prompt, map_b, emb, plen, m)
    steps, first, last_table = _step_tables(loader, aligned, map_b, emb, prefill_diffs)
    out: dict = {
        "rank": rank,
        "rid_decode": rid_a,
        "rid_prefill": rid_b,
        "prompt_tokens": plen,
        "fresh_prefill_tokens": m,
        "decode_steps": len(decode),
        "ignored_prefill_passes": [p.step for p in b_extra],
        "aligned_steps": len(aligned),
        "input_ids_identical": True,
        "embedding_identical": True,
        "embedding_module": pb[0].entries[emb].module_label,
        "steps": steps,
        "prefill": prefill,
        "context_identical": prefill["identical"],
    }
    return out | _first_divergence(first, last_table, prefill)


def _check_coverage(prompt: list[Pass], pb: list[Pass]) -> tuple[dict, int]:
    """B's position map and the prompt's length, once both prefills are known to start at
    position 0 (no cached prefix)."""
    map_b = position_map(pb, "B")
    map_a = position_map(prompt, "A (prompt prefill)")
    m = len(map_b)
    if sorted(map_b) != list(range(m)):
        raise DumpError(
            f"B's positions are not 0..{m - 1} (they start at {min(map_b)}): the fresh prefill "
            "reused a cached prefix; flush the cache before it"
        )
    plen = len(map_a)
    if sorted(map_a) != list(range(plen)):
        raise DumpError(
            f"A's prompt prefill covers positions {min(map_a)}..{max(map_a)}, not 0..{plen - 1}: "
            "it reused a cached prefix; flush the cache before the decode run"
        )
    return map_b, plen


def _check_step_count(decode: list[Pass], m: int, plen: int) -> None:
    """B is prompt + the K tokens decode consumed: A has K decode steps, or K + 1 when an
    overlap scheduler ran one more pass after the last token. Any other count is another
    capture."""
    fed = m - plen
    if len(decode) not in (fed, fed + 1):
        raise DumpError(
            f"different step counts: A has {len(decode)} decode steps but B's fresh prefill "
            f"holds the prompt ({plen} tokens) + {fed} decoded tokens, which {fed} decode steps "
            "(or one more, from an overlap scheduler) consume: not one capture's two folders"
        )


def _aligned_steps(
    prompt: list[Pass], decode: list[Pass], map_b: dict
) -> list[tuple[int, Pass, int]]:
    """(step number, pass, position) of each decode step inside the fresh prefill: the proof
    of alignment (same token ids row by row), before any diff is read."""
    aligned = []
    for k, d in enumerate(decode, start=1):
        pos = int(d.positions[0])
        if pos not in map_b:
            continue  # an overlap-scheduled extra step beyond the fresh prefill
        bp, row = map_b[pos]
        if int(d.input_ids[0]) != int(bp.input_ids[row]):
            raise MisalignedError(
                f"rows are misaligned: decode step {k} (position {pos}) consumed token "
                f"{int(d.input_ids[0])} but the fresh prefill's row at position {pos} holds "
                f"{int(bp.input_ids[row])}"
            )
        aligned.append((k, d, pos))
    if not aligned:
        raise DumpError(
            f"no decode step lies inside the fresh prefill (B covers positions 0..{len(map_b) - 1}, "
            f"decode steps start at {int(decode[0].positions[0])})"
        )
    for p in prompt:
        rows = [map_b[x][1] for x in p.positions.tolist() if x in map_b]
        ids_b = [int(map_b[x][0].input_ids[map_b[x][1]]) for x in p.positions.tolist()]
        if rows and p.input_ids.tolist() != ids_b:
            raise MisalignedError(
                f"rows are misaligned: the prompt's prefill (step {p.step}) and the fresh prefill "
                "hold different token ids at the prompt positions (not the same prompt?)"
            )
    return aligned


def _step_tables(
    loader: Loader, aligned: list[tuple[int, Pass, int]], map_b: dict, emb, prefill_diffs: dict
) -> tuple[list[dict], tuple | None, list]:
    """Each aligned decode step's row (steps), the first step with a differing module (its
    number, position, culprit row and table) and the last step's module table."""
    # what a decode step reads from earlier passes (the KV cache) is written from their inputs
    earlier: list[tuple[str, dict]] = [("prompt prefill", prefill_diffs)]
    steps, first, last_table = [], None, []
    for k, d, pos in aligned:
        diffs = compare_pass(loader, d, [pos], map_b)
        e = diffs.get(emb)
        if e is None or not e.identical:
            raise MisalignedError(
                f"rows are misaligned: decode step {k} (position {pos}) and the fresh prefill "
                f"row at that position have different embedding outputs "
                f"({d.entries[emb].label}), though the token ids match"
            )
        table = module_table(d, diffs, earlier)
        earlier.append((f"decode step {k}", diffs))
        worst = max((r.max_abs_diff for r in table if r.output_identical is False), default=0.0)
        culprit = first_differing(table)
        steps.append(
            {
                "decode_step": k,
                "position": pos,
                "identical": culprit is None,
                "max_abs_diff": worst,
                "first_divergent_module": _named(culprit),
            }
        )
        if culprit is not None and first is None:
            first = (k, pos, culprit, table)
        last_table = table
    return steps, first, last_table


def _first_divergence(first: tuple | None, last_table: list, prefill: dict) -> dict[str, object]:
    """The rank's verdict keys: the first differing module of the first differing step, or
    identical with the last step's table."""
    if first is None:
        return {
            "identical": True,
            "first_divergent_module": None,
            "unnamed_reason": None,
            "first_differing_module": None,
            "max_abs_diff": 0.0,
            "inputs_identical": None,
            "differing_inputs": [],
            "decode_step": None,
            "position": None,
            "inherited": [],
            "modules": [r.to_json() for r in last_table],
        }
    k, pos, culprit, table = first
    return {
        "identical": False,
        "first_divergent_module": _named(culprit),
        "unnamed_reason": unnamed_reason(culprit, prefill["first_divergent_module"]),
        "first_differing_module": culprit.module,
        "max_abs_diff": culprit.max_abs_diff,
        "inputs_identical": culprit.inputs_identical,
        "differing_inputs": culprit.differing_inputs,
        "decode_step": k,
        "position": pos,
        "inherited": [r.module for r in table if r.status == "inherited"],
        "modules": [r.to_json() for r in table],
    }


def _named(row) -> str | None:
    return row.module if row is not None and row.status == "first-divergent" else None


def _prefill_invariance(
    loader, prompt: list[Pass], map_b: dict, emb, plen: int, m: int
) -> tuple[dict, dict]:
    """The prompt prefill's module table against the fresh prefill's rows, and its diffs."""
    diffs: dict = {}
    for p in prompt:
        for key, d in compare_pass(loader, p, p.positions.tolist(), map_b).items():
            diffs[key] = merge_diffs(diffs.get(key), d) if key in diffs else d
    e = diffs.get(emb)
    if e is None or not e.identical:
        raise MisalignedError(
            "rows are misaligned: the prompt's prefill and the fresh prefill have different "
            "embedding outputs at the prompt positions"
        )
    table = module_table(prompt[0], diffs)
    culprit = first_differing(table)
    return {
        "m_prompt": plen,
        "m_fresh": m,
        "identical": culprit is None,
        "first_divergent_module": _named(culprit),
        "unnamed_reason": unnamed_reason(culprit),
        "first_differing_module": culprit.module if culprit else None,
        "max_abs_diff": culprit.max_abs_diff if culprit else 0.0,
        "position": culprit.position if culprit else None,
        "inputs_identical": culprit.inputs_identical if culprit else None,
        "inherited": [r.module for r in table if r.status == "inherited"],
        "modules": [r.to_json() for r in table],
    }, diffs


def analyze(dir_a: str | Path, dir_b: str | Path, words: VerdictWords) -> dict:
    """The analysis of two dump folders (A: decode run, B: fresh prefill), every rank; `words`
    (`words/dumps.verdict_words`, given by the layer above) says its verdict, last, as the JSON
    keeps it."""
    loader = Loader()
    fa, fb = index_folder(dir_a), index_folder(dir_b)
    pa, pb = build_passes(fa, loader, f"A ({dir_a})"), build_passes(fb, loader, f"B ({dir_b})")
    if set(pa) != set(pb):
        raise DumpError(
            f"mismatched folders: ranks {sorted(pa)} in {dir_a} but {sorted(pb)} in {dir_b}"
        )
    per_rank = {r: analyze_rank(loader, pa[r], pb[r], r) for r in sorted(pa)}

    def earliest(res: dict) -> tuple:
        if res["identical"]:
            return (1, 0, 0)
        order = next(i for i, m in enumerate(res["modules"]) if m["status"] in FIRST)
        return (0, res["decode_step"], order)

    rank = min(per_rank, key=lambda r: (earliest(per_rank[r]), r))
    result: dict[str, Any] = {"dir_a": str(dir_a), "dir_b": str(dir_b), "ranks": sorted(per_rank)}
    result |= per_rank[rank]
    result["per_rank"] = (
        {
            str(r): {k: v for k, v in res.items() if k not in ("modules", "steps", "prefill")}
            for r, res in per_rank.items()
        }
        if len(per_rank) > 1
        else None
    )
    result["ranks_agree"] = ranks_agree(per_rank) if len(per_rank) > 1 else None
    result["verdict"] = words(verdict_of(result))
    return result


def _where(res: dict) -> tuple:
    """What a rank's analysis names: the first divergent module and where (None: identical)."""
    if res["identical"]:
        return ("identical",)
    return (res["first_divergent_module"], res["decode_step"], res["position"])


def ranks_agree(per_rank: dict[int, dict]) -> bool:
    """Every rank names the same first divergence (module, decode step, position), or none."""
    return len({_where(res) for res in per_rank.values()}) == 1


class Found(StrEnum):
    """What a comparison (decode vs fresh prefill, or the prompt prefill's M-invariance) found."""

    IDENTICAL = "identical"  # bit-identical at every aligned module
    NAMED = "named"  # a first divergent module: inputs bit-identical, output differs
    UNNAMED = "unnamed"  # a module differs but none can be named (`unnamed_reason` says why)


@dataclass(frozen=True)
class Divergence:
    """One comparison's finding and the figures it rests on."""

    found: Found
    module: str | None = None  # the first divergent module (NAMED)
    max_abs_diff: object = 0.0
    position: int | None = None
    unnamed_reason: str | None = None  # UNNAMED: why no module is named
    decode_step: int | None = None  # decode only
    inherited: int = 0  # decode only: the later modules that inherit the difference


@dataclass(frozen=True)
class RankFinding:
    """One rank's first divergence (several ranks only)."""

    rank: int
    identical: bool
    module: str | None
    decode_step: int | None


@dataclass(frozen=True)
class DumpsVerdict:
    """What `kltui dumps analyze` found: decode against the fresh prefill over the aligned
    steps, the prompt prefill's M-invariance, and (TP) whether the ranks agree."""

    decode: Divergence
    aligned_steps: object
    prefill: Divergence
    m_prompt: object
    m_fresh: object
    ranks: tuple[RankFinding, ...] = ()  # () for one rank
    ranks_agree: bool | None = None
    shown: int | None = None  # the rank the result shows (the earliest divergence)


# what says a verdict: `words/dumps.verdict_words` (words/ sits above dumps/, so it is given)
VerdictWords = Callable[[DumpsVerdict], str]


def _divergence(r: dict, decode: bool) -> Divergence:
    if r["identical"]:
        return Divergence(Found.IDENTICAL)
    named = r["first_divergent_module"]
    return Divergence(
        Found.NAMED if named else Found.UNNAMED,
        module=named,
        max_abs_diff=r["max_abs_diff"],
        position=r["position"],
        unnamed_reason=None if named else r["unnamed_reason"],
        decode_step=r["decode_step"] if decode else None,
        inherited=len(r["inherited"]) if decode else 0,
    )


def verdict_of(r: dict) -> DumpsVerdict:
    """The verdict of an analysis result (`analyze`'s dict), typed."""
    pre = r["prefill"]
    ranks = tuple(
        RankFinding(int(k), bool(v["identical"]), v["first_divergent_module"], v["decode_step"])
        for k, v in sorted((r.get("per_rank") or {}).items(), key=lambda kv: int(kv[0]))
    )
    return DumpsVerdict(
        decode=_divergence(r, decode=True),
        aligned_steps=r.get("aligned_steps"),
        prefill=_divergence(pre, decode=False),
        m_prompt=pre["m_prompt"],
        m_fresh=pre["m_fresh"],
        ranks=ranks,
        ranks_agree=r.get("ranks_agree") if ranks else None,
        shown=r.get("rank") if ranks else None,
    )
