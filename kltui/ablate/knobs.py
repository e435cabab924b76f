"""The knobs of an ablation, by the names users know, and the SGLang flags behind them.

A knob is one launch setting: `attention-backend` is `--attention-backend V`, `cuda-graph=off`
is `--disable-cuda-graph` present (on: absent), `tp` is `--tp-size N` (also spelled
`--tensor-parallel-size` and `--tp`). Any raw flag is a knob too: `--vary
"--triton-attention-num-kv-splits=1,8"` sets `--triton-attention-num-kv-splits V` with each value
as typed (`--chunked-prefill-size=0` is 0, `--max-running-requests=1` is 1); a raw flag is a
switch (present for on, its values on/off) only when the installed server's `--help` shows that
it takes no value (`switch_flags`, `check_known`).

Flag names and forms are SGLang's `python/sglang/srt/server_args.py` (`--tp-size` with its
alias `--tensor-parallel-size`; `--disable-cuda-graph`, `--disable-radix-cache`,
`--enable-deterministic-inference`, `--enable-torch-compile` are store_true switches). Each knob
also names the `/server_info` key that reports it (the field name of `ServerArgs`, as SGLang
prints it), so a launched configuration can be checked for having taken the value it was
given, and servers that already run can be told apart by their settings (attach mode).

`installed_flags` reads an argparse `--help` (SGLang's `launch_server --help`, the reference
server's `serve --help`) and `check_known` refuses a knob whose flag the installed server does
not list, before anything starts. Every refusal is one line naming the spec.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from kltui.errors import UsageError
from kltui.untrusted import one_line

ON, OFF = "on", "off"
# spellings of a switch value, as people type them
_SWITCH_WORDS = {
    "on": ON,
    "off": OFF,
    "true": ON,
    "false": OFF,
    "yes": ON,
    "no": OFF,
    "1": ON,
    "0": OFF,
}
_FLAG = re.compile(r"--[A-Za-z0-9][A-Za-z0-9_.-]*")
_FLAG_ONLY = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9_-]*$")

CHOICE, INT, SWITCH, RAW = "choice", "int", "switch", "raw"


@dataclass(frozen=True)
class Knob:
    """One launch setting: its name, its flag spellings (the one to write first), how its
    value is written, and the /server_info key that reports it."""

    name: str  # "attention-backend", or a raw flag "--triton-attention-num-kv-splits"
    flags: tuple[str, ...]  # every spelling the server accepts; flags[0] is written
    kind: str  # CHOICE (any word), INT, SWITCH (flag present or absent) or RAW (any value)
    key: str | None  # the /server_info key that reports it (None: none known)
    # SWITCH: the value for which the flag is present ("on" for deterministic, "off" for
    # cuda-graph, whose flag is --disable-cuda-graph)
    present_when: str = ON
    # value spellings that mean one value (SGLang's dtype "half" is "float16")
    aliases: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def raw(self) -> bool:
        """A flag given by its own name, not one of the knobs kltui knows."""
        return self.name.startswith("--")

    @property
    def switch(self) -> bool:
        """Whether the flag takes no value: present or absent."""
        return self.kind == SWITCH

    def normalize(self, value: str) -> str:
        """The value as kltui writes and compares it (UsageError when it cannot be one)."""
        v = value.strip()
        if not v:
            raise UsageError(f"{self.name}: an empty value")
        if self.switch:
            word = _SWITCH_WORDS.get(v.lower())
            if word is None:
                raise UsageError(f"{self.name} takes on or off, not {one_line(v, 40)!r}")
            return word
        if self.kind == INT:
            try:
                return str(int(v))
            except ValueError:
                raise UsageError(
                    f"{self.name} takes a whole number, not {one_line(v, 40)!r}"
                ) from None
        return self.aliases.get(v.lower(), v) if self.aliases else v

    def absent(self) -> str | None:
        """The value the server runs with when the flag is not given: known for a switch
        (the opposite of `present_when`), the server's own default (None) otherwise."""
        if not self.switch:
            return None
        return OFF if self.present_when == ON else ON

    def setting(self) -> Setting | None:
        """How /server_info reports this knob (None: no key known)."""
        return None if self.key is None else Setting(self.key, self)


def _knob(name: str, flags: tuple[str, ...], kind: str, key: str, **kw) -> Knob:
    return Knob(name, flags, kind, key, **kw)


_DTYPES = {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}

KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        _knob("attention-backend", ("--attention-backend",), CHOICE, "attention_backend"),
        _knob("sampling-backend", ("--sampling-backend",), CHOICE, "sampling_backend"),
        _knob(
            "cuda-graph",
            ("--disable-cuda-graph",),
            SWITCH,
            "disable_cuda_graph",
            present_when=OFF,
        ),
        _knob(
            "radix-cache",
            ("--disable-radix-cache",),
            SWITCH,
            "disable_radix_cache",
            present_when=OFF,
        ),
        _knob("page-size", ("--page-size",), INT, "page_size"),
        _knob("chunked-prefill-size", ("--chunked-prefill-size",), INT, "chunked_prefill_size"),
        # the reference server's older spelling is --deterministic (kltui/reference)
        _knob(
            "deterministic",
            ("--enable-deterministic-inference", "--deterministic"),
            SWITCH,
            "enable_deterministic_inference",
        ),
        _knob("dtype", ("--dtype",), CHOICE, "dtype", aliases=_DTYPES),
        _knob("kv-cache-dtype", ("--kv-cache-dtype",), CHOICE, "kv_cache_dtype", aliases=_DTYPES),
        # --tp is no flag of its own: argparse takes it as the unique prefix of --tp-size
        _knob("tp", ("--tp-size", "--tensor-parallel-size", "--tp"), INT, "tp_size"),
        _knob("torch-compile", ("--enable-torch-compile",), SWITCH, "enable_torch_compile"),
    )
}


def raw_knob(flag: str, switch: bool = False) -> Knob:
    """A knob for a raw flag: a flag with a value, written as typed, unless `switch` (the
    installed `--help` shows that it takes none: `check_known`); its /server_info key is the
    flag's `ServerArgs` field name (`--enable-mixed-chunk` -> `enable_mixed_chunk`), SGLang's
    one rule for deriving flags from fields."""
    key = flag[2:].replace("-", "_")
    return Knob(flag, (flag,), SWITCH if switch else RAW, key)


@dataclass(frozen=True)
class Vary:
    """One `--vary KNOB=V1,V2`: the knob and its values, normalized, in the order given."""

    knob: Knob
    values: tuple[str, ...]

    @property
    def spec(self) -> str:
        """The spec as kltui writes it back."""
        return f"{self.knob.name}={','.join(self.values)}"


# difflib's ratio from which a name is offered as a typo's fix: --attention-backend and --api-key
# share half their letters (0.5), not a typo; atention-backend is one (0.97)
CLOSE = 0.75


def _closest(word: str, words: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, sorted(words), n=1, cutoff=CLOSE)
    return found[0] if found else None


def parse_vary(spec: str) -> Vary:
    """`KNOB=V1,V2` or `--raw-flag=V1,V2` as a Vary (UsageError, one line naming the spec)."""
    shown = one_line(spec, 80)
    name, eq, rest = str(spec).strip().partition("=")
    name = name.strip()
    example = "expected KNOB=V1,V2 (e.g. attention-backend=fa3,triton or --flag=1,8)"
    if not eq or not name:
        raise UsageError(f"--vary {shown!r}: {example}")
    values = [v.strip() for v in rest.split(",")]
    if not rest.strip() or any(not v for v in values):
        raise UsageError(f"--vary {shown!r}: an empty value; {example}")
    if name.startswith("-"):
        if not _FLAG_ONLY.match(name):
            raise UsageError(f"--vary {shown!r}: {one_line(name, 60)!r} is not a flag name")
        knob = raw_knob(name)
    else:
        known = KNOBS.get(name.lower())
        if known is None:
            near = _closest(name.lower(), KNOBS)
            hint = f" (closest: {near})" if near else ""
            raise UsageError(
                f"--vary {shown!r}: unknown knob {one_line(name, 40)!r}{hint}; knobs: "
                f"{', '.join(KNOBS)}, or a raw flag such as --triton-attention-num-kv-splits=1,8"
            )
        knob = known
    try:
        normal = [knob.normalize(v) for v in values]
    except UsageError as e:
        raise UsageError(f"--vary {shown!r}: {e}") from None
    twice = sorted({v for v in normal if normal.count(v) > 1})
    if twice:
        raise UsageError(f"--vary {shown!r}: {', '.join(twice)} given more than once")
    return Vary(knob, tuple(normal))


# --------------------------------------------------------------------------- --help
def _invocation(line: str) -> str | None:
    """The option part of an argparse help line ("  --tp-size TP, --tensor-parallel-size TP
    help ..."), None for a line that defines no option (help text, headings)."""
    stripped = line.lstrip(" ")
    indent = len(line) - len(stripped)
    # argparse indents invocations by 2 per section level and help text to a column past them
    if not stripped.startswith("-") or indent > 8:
        return None
    return re.split(r"\s{2,}", stripped, maxsplit=1)[0]


def _help_lines(help_text: str) -> Iterator[tuple[bool, str]]:
    """Each line of an argparse `--help`, and whether it is in the usage block."""
    in_usage = False
    for line in str(help_text).splitlines():
        if line.lstrip().lower().startswith("usage:"):
            in_usage = True
        elif in_usage and (not line.strip() or not line[:1].isspace()):
            # the block's continuation lines are indented; "prog: error: ..." is not one
            in_usage = False
        yield in_usage, line


def installed_flags(help_text: str) -> set[str]:
    """Every long flag an argparse `--help` lists: the usage block's and each option line's,
    aliases included (`--tensor-parallel-size TENSOR_PARALLEL_SIZE, --tp-size ...`). Flags
    named only inside help sentences are not counted: a sentence may name a flag of another
    program or one split across lines."""
    flags: set[str] = set()
    for in_usage, line in _help_lines(help_text):
        if in_usage:
            flags.update(m.group(0) for m in _FLAG.finditer(line))
            continue
        inv = _invocation(line)
        if inv is not None:
            for part in inv.split(","):
                tok = part.strip().split(" ", 1)[0]
                if _FLAG_ONLY.match(tok):
                    flags.add(tok)
    flags.discard("--help")
    return flags


# "[--flag]" (a switch) or "[--flag METAVAR]", "[--flag {a,b}]" in an argparse usage block
_USAGE_OPTION = re.compile(r"\[(--[A-Za-z0-9][A-Za-z0-9_-]*)(?:\s+([^\[\]\s][^\[\]]*))?\]")


def switch_flags(help_text: str) -> set[str]:
    """The long flags an argparse `--help` shows taking no value: an option line with no
    metavar after any of its spellings (`--disable-radix-cache`, `--deterministic,
    --enable-deterministic-inference`), or a usage entry `[--flag]`. An option line decides
    over the usage block; a flag shown with a metavar anywhere takes a value."""
    switches: set[str] = set()
    valued: set[str] = set()
    for in_usage, line in _help_lines(help_text):
        if in_usage:
            for m in _USAGE_OPTION.finditer(line):
                (valued if m.group(2) else switches).add(m.group(1))
            continue
        inv = _invocation(line)
        if inv is None:
            continue
        parts = [p.strip().split() for p in inv.split(",") if p.strip()]
        names = [p[0] for p in parts if p and _FLAG_ONLY.match(p[0])]
        takes = any(len(p) > 1 for p in parts)
        (valued if takes else switches).update(names)
        if takes:
            switches.difference_update(names)
    return switches - valued - {"--help"}


def _as_switch(v: Vary) -> Vary:
    """A raw flag's vary once --help shows that the flag takes no value: its values read as
    on/off (UsageError, one line, for any other value)."""
    knob = replace(v.knob, kind=SWITCH)
    try:
        values = tuple(knob.normalize(x) for x in v.values)
    except UsageError:
        raise UsageError(
            f"--vary {one_line(v.spec, 80)!r}: the installed server's --help shows "
            f"{v.knob.name} taking no value: give on or off (present or absent)"
        ) from None
    twice = sorted({x for x in values if values.count(x) > 1})
    if twice:
        raise UsageError(
            f"--vary {one_line(v.spec, 80)!r}: {', '.join(twice)} given more than once"
        )
    return Vary(knob, values)


def check_known(
    varies: Iterable[Vary], flags: set[str], switches: Collection[str] = frozenset()
) -> tuple[Vary, ...]:
    """Refuse a knob whose flag the installed server does not list (UsageError, one line with
    the closest flag it does list); return the varies with each knob's installed spelling
    first, so that it is the one written into a launch, and a raw flag that `switches` (the
    flags the installed --help shows taking no value, `switch_flags`) holds made a switch."""
    if not flags:
        raise UsageError(
            "no flag could be read from the server's --help: cannot check the knobs before "
            "launching (is the launch command a server with an argparse --help?)"
        )
    out = []
    for v in varies:
        have = tuple(f for f in v.knob.flags if f in flags)
        if not have:
            want = v.knob.flags[0]
            near = _closest(want, flags)
            what = v.knob.name if v.knob.raw else f"{v.knob.name} ({want})"
            hint = (
                f"; closest: {near}"
                if near
                else ", nor one close to it: this server has no such setting to vary"
            )
            raise UsageError(
                f"--vary {one_line(v.spec, 80)!r}: the installed server has no {what} flag{hint}"
            )
        rest = tuple(f for f in v.knob.flags if f not in have)
        v = replace(v, knob=replace(v.knob, flags=have + rest))
        if v.knob.raw and not v.knob.switch and have[0] in switches:
            v = _as_switch(v)
        out.append(v)
    return tuple(out)


# --------------------------------------------------------------------------- argv
def _takes_value(knob: Knob, nxt: str | None) -> bool:
    if knob.switch or nxt is None:
        return False
    if knob.kind == RAW:
        # a raw flag's arity is unknown: its value is the next word unless that is a flag
        return not nxt.startswith("--")
    return True


def _find(argv: list[str], knob: Knob) -> list[tuple[int, int, str | None]]:
    """Every occurrence of the knob's flags: (start, length, value; None for a switch)."""
    found: list[tuple[int, int, str | None]] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        flag, eq, val = word.partition("=")
        if flag in knob.flags:
            if eq:
                found.append((i, 1, val))
            elif _takes_value(knob, argv[i + 1] if i + 1 < len(argv) else None):
                found.append((i, 2, argv[i + 1]))
                i += 1
            else:
                found.append((i, 1, None))
        i += 1
    return found


def current(argv: list[str], knob: Knob) -> str | None:
    """The knob's value in a launch argv: the last occurrence wins, as in argparse; a switch
    is `present_when` when present and the other value when absent; a value flag that is
    absent is None (the server's own default)."""
    found = _find(list(argv), knob)
    if knob.switch:
        return knob.present_when if found else knob.absent()
    if not found or found[-1][2] is None:
        return None
    return knob.normalize(found[-1][2])


def apply(argv: list[str], knob: Knob | str, value: str) -> list[str]:
    """The launch argv with the knob set to `value`: every occurrence of its flags
    (`--flag V`, `--flag=V`, a switch) removed, then the flag written where it first stood
    (in that form and spelling) or appended (`--flag V`, the knob's first spelling); a switch
    is written only when `value` is its `present_when`."""
    k = KNOBS[knob] if isinstance(knob, str) and knob in KNOBS else knob
    if isinstance(k, str):
        k = raw_knob(k)
    v = k.normalize(value)
    argv = list(argv)
    found = _find(argv, k)
    at = found[0][0] if found else len(argv)
    spelled = argv[at].partition("=")[0] if found else k.flags[0]
    equals = bool(found) and "=" in argv[at]
    drop = {i for start, n, _ in found for i in range(start, start + n)}
    keep_before = [w for i, w in enumerate(argv[:at]) if i not in drop]
    keep_after = [w for i, w in enumerate(argv) if i >= at and i not in drop]
    if k.switch:
        new = [spelled] if v == k.present_when else []
    else:
        new = [f"{spelled}={v}"] if equals else [spelled, v]
    return keep_before + new + keep_after


# --------------------------------------------------------------------------- /server_info
def _number(x: object) -> float | None:
    if isinstance(x, bool):
        return None
    try:
        f = float(str(x))
    except ValueError:
        return None
    return f if math.isfinite(f) else None


@dataclass(frozen=True)
class Setting:
    """The /server_info key that reports a knob, and how a reported value reads as one of the
    knob's values: a switch's key is true when its flag is present (`disable_cuda_graph: true`
    is cuda-graph=off), numbers compare as numbers, words through the knob's aliases."""

    key: str
    knob: Knob

    def read(self, info: Mapping[str, object]) -> str | None:
        """The knob's value as `info` reports it (None: not reported, or not readable)."""
        if self.key not in info:
            return None
        x = info[self.key]
        if self.knob.switch:
            if isinstance(x, bool):
                present = x
            else:
                word = _SWITCH_WORDS.get(str(x).strip().lower())
                if word is None:
                    return None
                present = word == ON
            return self.knob.present_when if present else self.knob.absent()
        if x is None or isinstance(x, dict | list):
            return None
        if self.knob.kind == INT:
            n = _number(x)
            return str(int(n)) if n is not None and n == int(n) else None
        if isinstance(x, bool):
            return ON if x else OFF
        text = str(x)
        return self.knob.aliases.get(text.lower(), text) if self.knob.aliases else text

    def matches(self, info: Mapping[str, object], asked: str) -> bool | None:
        """Whether `info` reports the value `asked` (None: it does not report the key)."""
        got = self.read(info)
        if got is None:
            return None
        want = self.knob.normalize(asked)
        if got == want:
            return True
        a, b = _number(got), _number(want)
        return a is not None and a == b


def settings_key(knob: Knob | str) -> Setting | None:
    """The /server_info key that reports `knob` (a name, a raw flag or a Knob) with how to
    compare its reported value to the asked one; None when no key is known."""
    if isinstance(knob, str):
        k = KNOBS.get(knob) or (raw_knob(knob) if knob.startswith("--") else None)
        if k is None:
            raise UsageError(f"unknown knob {one_line(knob, 40)!r}")
        knob = k
    return knob.setting()
