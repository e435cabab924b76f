"""Top of the dashboard: what is running (live or replay, verdict) and against what.

The server line lists exactly the settings that decide what a result means; a number read
without them (deterministic inference off? radix cache off?) is easy to misjudge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual.dom import DOMNode
from textual.widgets import Static

from kltui.engines.geometry import geometry_of
from kltui.engines.identity import EngineName, ServerIdentity
from kltui.session.labels import MANY_SERVERS
from kltui.session.servers import BY_KEY, NO_TOKENIZER, SUMMARY_KEYS, fault_of, off_on, on_off
from kltui.session.store import RecordedConfig, SessionStore
from kltui.tui.widgets.parts import badge_part, part
from kltui.untrusted import safe
from kltui.words.geometry import geometry_phrases


@dataclass
class RunStatus:
    """What the app knows beyond the store: mode, retries, watch state."""

    mode: str = "live"  # live | replay
    running: bool = False
    run_no: int = 0
    replay_label: str = ""  # recording date, file and speed
    retry_in: int | None = None
    retry_attempt: int = 0
    watch: str | None = None  # watch status text, None when not watching
    message: str | None = None  # e.g. "connecting to ..."
    recording: str | None = None
    # the last run's error, as `kltui check` prints it ("error: URL: cannot connect ..."); kept
    # while the next connection attempt runs
    error: str | None = None


def _local(ts: float | None) -> str:
    if not ts:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


# the verdict badge's state class; any other verdict reads as a warning
VERDICT_CLASS = {"pass": "-pass", "fail": "-fail", "error": "-error"}
STATE_CLASSES = ("-live", "-idle", "-replay", "-running", "-pass", "-fail", "-error", "-warn")


class TitleBar(Static):
    """One line; its state is CSS classes (`-replay`, `-running`, `-pass`, `-fail`, `-error`,
    `-warn`, `-read-only`, `-watching`, `-problems`, `-fatal`) and app.tcss colours its parts."""

    COMPONENT_CLASSES = {
        "titlebar--brand",
        "titlebar--mode",
        "titlebar--live",
        "titlebar--read-only",
        "titlebar--watch",
        "titlebar--problems",
        "titlebar--verdict",
    }

    def _state(self, store: SessionStore | None, status: RunStatus) -> set[str]:
        on = {"-replay" if status.mode == "replay" else "-live" if status.running else "-idle"}
        fin = store.finished if store else None
        if fin is not None:
            on.add(VERDICT_CLASS.get(fin.verdict, "-warn"))
        elif status.running:
            on.add("-running")
        return on

    _shown: tuple[SessionStore | None, RunStatus | None] | None = None

    def on_resize(self) -> None:
        """Redraw at the new width (the verdict badge keeps its place)."""
        # the line is laid out for one width (the verdict padded to the right edge): drawn
        # again at the new one, or a narrower terminal cuts the verdict badge off
        if self._shown is not None:
            self.show(*self._shown)

    def show(self, store: SessionStore | None, status: RunStatus | None) -> None:
        """Show the run's state (live or replay, running, verdict, problems) in the title bar."""
        self._shown = (store, status)
        status = status or RunStatus()
        on = self._state(store, status)
        problems = store.problems if store is not None else []
        self.set_class(bool(getattr(self.app, "read_only", False)), "-read-only")
        self.set_class(bool(status.watch), "-watching")
        self.set_class(bool(problems), "-problems")
        self.set_class(any(p.fatal for p in problems), "-fatal")
        for name in STATE_CLASSES:
            self.set_class(name in on, name)
        t = self._mode(status)
        extras = self._extras(store, status)
        # The verdict sits at the right edge, where the eye lands last.
        right = self._verdict(store, status, len(problems))
        # full width, before its first layout too; while a terminal shrinks the widget still
        # has its old width, so the narrower of the two (on_resize draws it again)
        width = min(self.size.width or self.app.size.width, self.app.size.width)
        room = width - t.cell_len - right.cell_len
        for _, dropped in sorted(extras, key=lambda e: e[0]):
            if sum(e.cell_len for _, e in extras) <= room:
                break
            extras = [e for e in extras if e[1] is not dropped]
        for _, extra in extras:
            t.append_text(extra)
        pad = width - t.cell_len - right.cell_len
        if pad > 0:
            t.append(" " * pad)
        else:
            t.truncate(max(0, width - right.cell_len), overflow="ellipsis")
        t.append_text(right)
        self.update(t, layout=False)  # always one line

    def _mode(self, status: RunStatus) -> Text:
        """The line's start: the brand, then replay and its label, live, or idle."""
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" kltui ", style=badge_part(self, "titlebar--brand"))
        t.append(" ")
        if status.mode == "replay":
            t.append(" ▶ REPLAY ", style=badge_part(self, "titlebar--mode"))
            t.append(" ")
            t.append_text(safe(status.replay_label, limit=90))
        elif status.running:
            t.append("● ", style=part(self, "titlebar--live"))
            t.append("LIVE", style="bold")
        else:
            t.append("○ idle", style="dim")
        return t

    def _extras(self, store: SessionStore | None, status: RunStatus) -> list[tuple[int, Text]]:
        """(priority, text) of what follows the mode: the least important go first when the
        line is too narrow, whole, rather than cut mid-word at the edge ("kltui 0.1…")."""
        extras: list[tuple[int, Text]] = []
        run = store.run if store else None
        if run is not None:
            extras.append((3, Text(f"  run {status.run_no} · id {run.run_id}", style="dim")))
            if status.mode != "replay":
                extras.append((1, Text(f" · started {_local(run.started_at)}", style="dim")))
            extras.append((0, Text(f" · kltui {run.kltui_version}", style="dim")))
        if self.has_class("-read-only"):
            extras.append((4, Text("  read-only", style=part(self, "titlebar--read-only"))))
        if status.watch:
            watch = Text("  ⟳ ", style=part(self, "titlebar--watch"))
            watch.append(status.watch, style="dim")
            extras.append((2, watch))
        return extras

    def _verdict(self, store: SessionStore | None, status: RunStatus, n: int) -> Text:
        """The right edge: the number of problems and the verdict (or RUNNING)."""
        right = Text(no_wrap=True)
        if n:
            right.append(
                f" {n} problem{'s' if n != 1 else ''} ", style=part(self, "titlebar--problems")
            )
            right.append(" ")
        fin = store.finished if store else None
        if fin is not None:
            right.append(f" {fin.verdict.upper()} ", style=badge_part(self, "titlebar--verdict"))
        elif status.running:
            right.append(" RUNNING ", style=badge_part(self, "titlebar--verdict"))
        right.append(" ")
        return right


# the flags drawn on their own (with their own colours), in this order
RUN_FLAGS = ("disable_radix_cache", "enable_deterministic_inference", "disable_cuda_graph")
SEP = " · "
INDENT = "    "


def _setting(label: str, value=None, *, style: str = "", label_style: str = "dim") -> Text:
    """One setting as an unbreakable unit of the server line."""
    t = Text(label, style=label_style)
    if value is not None:
        t.append(" ")
        t.append_text(safe(value, style=style, limit=48))
    return t


def flow(chunks: list[Text], width: int | None) -> Text:
    """Settings on as many lines as `width` needs, broken only between two settings (a
    setting split over two lines, "deterministic" / "off", reads as something else)."""
    lines: list[Text] = []
    cur = Text(no_wrap=True, overflow="ellipsis")
    for i, chunk in enumerate(chunks):
        fits = width is None or cur.cell_len + len(SEP) + chunk.cell_len <= width
        if i == 0:
            cur.append_text(chunk)
        elif fits or cur.plain.strip() == "":
            cur.append(SEP, style="dim")
            cur.append_text(chunk)
        else:
            lines.append(cur)
            cur = Text(INDENT, no_wrap=True, overflow="ellipsis")
            cur.append_text(chunk)
    lines.append(cur)
    return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)


def server_settings(s: ServerIdentity, config: RecordedConfig, node: DOMNode) -> list[Text]:
    """One server's identity as a list of settings; every string is untrusted (`safe`).
    Up, down and warnings are `node`'s component classes, coloured in app.tcss."""
    strong_ok = part(node, "servers--ok", "servers--strong")
    strong_warn = part(node, "servers--warn", "servers--strong")
    bad, strong_bad = part(node, "servers--bad"), part(node, "servers--bad", "servers--strong")
    head = Text()
    if s.error:
        head.append("✗ ", style=strong_bad)
        head.append_text(safe(s.url or "?", style="bold"))
        head.append("  down: ", style=bad)
        head.append_text(safe(s.error, limit=160))
        return [head]
    head.append("✓ ", style=strong_ok)
    head.append_text(safe(s.url or "?", style="bold"))
    head.append("  ")
    engine = s.engine
    head.append_text(safe(f"{s.engine_label} {s.get('version', '?')}"))
    out = [head]
    model = s.get("served_model_name") or s.model_path
    out.append(_setting("model", model, style="bold"))
    if engine == EngineName.HF:
        # the reference: transformers in a worker process, labelled as the reference
        out.append(Text("HF reference", style=strong_warn))
        return out + _shown(s, HF_SHOWN)
    if engine == EngineName.VLLM:
        # the baseline: SGLang's radix/deterministic/streaming flags do not apply to it
        out.append(Text("baseline", style=strong_warn))
        return out + _shown(s, VLLM_SHOWN)
    return out + _sglang_settings(s, config, node)


# (label, identity key) of what the header shows of the reference and of the vLLM baseline
HF_SHOWN = (("dtype", "dtype"), ("device", "device"), ("attn", "attn_implementation"))
VLLM_SHOWN = (
    ("max len", "max_model_len"),
    ("dtype", "dtype"),
    ("tp", "tp_size"),
    ("logprobs", "logprobs_mode"),
    ("attn", "attention_backend"),
)


def _shown(s: ServerIdentity, keys: tuple[tuple[str, str], ...]) -> list[Text]:
    """The settings of `keys` the server reported."""
    return [_setting(label, s.get(key)) for label, key in keys if s.get(key) is not None]


def _sglang_settings(s: ServerIdentity, config: RecordedConfig, node: DOMNode) -> list[Text]:
    """An SGLang server's settings after its model: what decides its numbers (tp, dtype,
    attention, page size), the run flags, streaming, a fault, its state geometry."""
    strong_ok = part(node, "servers--ok", "servers--strong")
    warn, strong_bad = part(node, "servers--warn"), part(node, "servers--bad", "servers--strong")
    out: list[Text] = []
    for key in ("tp_size", "dtype", "attention_backend", "page_size"):
        out.append(_setting(BY_KEY[key].short, s.get(key)))
    radix, det, cg = (BY_KEY[k] for k in RUN_FLAGS)
    radix_off = bool(s.disable_radix_cache)
    out.append(Text(f"{radix.short} {off_on(radix_off)}", style=warn if radix_off else ""))
    on = bool(s.enable_deterministic_inference)
    out.append(Text(f"{det.short} {on_off(on)}", style=strong_ok if on else ""))
    if s.disable_cuda_graph is not None:
        out.append(Text(f"{cg.short} {off_on(s.disable_cuda_graph)}"))
    if config.stream is False:
        stream = "stream off"
    else:
        stream = "stream incremental" if s.get("incremental_streaming_output") else "stream cumul."
    out.append(Text(stream))
    if s.skip_tokenizer_init:
        # ids only: token text in the drill-down comes from --tokenizer, if given
        out.append(Text(NO_TOKENIZER, style=warn))
    fault = fault_of(s)
    if fault is not None:
        t = Text("fault ", style=strong_bad)
        t.append_text(safe(fault, style=strong_bad, limit=40))
        out.append(t)
    # a stateful model's cache geometry (words/geometry.py; nothing for a dense model)
    out.extend(safe(phrase, limit=80) for phrase in geometry_phrases(geometry_of(s)))
    return out


def compact_settings(s: ServerIdentity, node: DOMNode) -> list[tuple[int, Text]]:
    """A server as (priority, setting) for one line: the settings that decide what a number
    means first (radix cache, deterministic inference: 1; model: 2; tp, dtype, a reference
    server's fault: 3; version: 4),
    the least important dropped first when the line is too narrow."""
    strong_ok = part(node, "servers--ok", "servers--strong")
    head = Text()
    if s.error:
        head.append("✗ ", style=part(node, "servers--bad", "servers--strong"))
        head.append_text(safe(_hostport(s.url), style="bold"))
        head.append(" down", style=part(node, "servers--bad"))
        return [(0, head)]
    head.append("✓ ", style=strong_ok)
    head.append_text(safe(_hostport(s.url), style="bold"))
    out = [(0, head)]
    model = str(s.get("served_model_name") or s.model_path or "?").rstrip("/")
    out.append((2, safe(model.rsplit("/", 1)[-1], style="bold", limit=32)))
    engine = s.engine
    if engine in (EngineName.VLLM, EngineName.HF):
        label = "HF reference" if engine == EngineName.HF else "baseline"
        out.append((1, Text(label, style=part(node, "servers--warn", "servers--strong"))))
    out.append((3, _setting(BY_KEY["tp_size"].short, s.get("tp_size"))))
    out.append((3, safe(s.get("dtype", "?"), limit=16)))
    if engine not in (EngineName.VLLM, EngineName.HF):
        radix_off = bool(s.disable_radix_cache)
        warn = part(node, "servers--warn")
        out.append((1, Text(f"radix {off_on(radix_off)}", style=warn if radix_off else "")))
        on = bool(s.enable_deterministic_inference)
        out.append((1, Text(f"deterministic {on_off(on)}", style=strong_ok if on else "")))
        fault = fault_of(s)
        if fault is not None:
            bad = part(node, "servers--bad", "servers--strong")
            # the demo's planted bug: its own flag said so; it goes before tp and dtype
            out.append((3, Text("fault ", style=bad).append_text(safe(fault, style=bad, limit=20))))
    # the version without its local part ("0.5.23+kltui.reference" -> "0.5.23")
    version = str(s.get("version", "?")).split("+", 1)[0]
    out.append((4, safe(f"{engine} {version}", style="dim", limit=24)))
    return out


def _hostport(url: str | None) -> str:
    return (url or "?").split("://", 1)[-1]


def one_line(servers: list[list[tuple[int, Text]]], width: int | None) -> Text:
    """Servers on one line: each setting whole or not at all, the least important dropped
    first; what is left after that is cut at the edge."""
    joint = "  │  "

    def total(groups) -> int:
        return sum(sum(t.cell_len for _, t in g) + len(SEP) * (len(g) - 1) for g in groups) + len(
            joint
        ) * (len(groups) - 1)

    groups = [list(g) for g in servers]
    while width is not None and total(groups) > width:
        worst = max((p for g in groups for p, _ in g), default=0)
        if worst == 0:
            break
        for g in groups:  # the last of the least important goes first
            drop = [i for i, (p, _) in enumerate(g) if p == worst]
            if drop:
                del g[drop[-1]]
                break
    out = Text(no_wrap=True, overflow="ellipsis")
    for i, g in enumerate(groups):
        if i:
            out.append(joint, style="dim")
        for j, (_, t) in enumerate(g):
            if j:
                out.append(SEP, style="dim")
            out.append_text(t)
    if width is not None and out.cell_len > width:
        out.truncate(width, overflow="ellipsis")
    return out


def server_text(
    s: ServerIdentity, config: RecordedConfig, node: DOMNode, width: int | None = None
) -> Text:
    """A server's settings as text wrapped to a width."""
    return flow(server_settings(s, config, node), width)


def prompt_text(ps: dict, config: RecordedConfig, width: int | None = None) -> Text:
    """The prompt set and run settings as text wrapped to a width."""
    head = Text("prompts ", style="dim")
    head.append_text(safe(ps.get("source", "?"), style="bold", limit=60))
    out = [head, Text(f"{ps.get('n', '?')} prompts"), Text(f"{ps.get('tokens', '?')} tokens")]
    sha = str(ps.get("sha256", ""))
    if sha:
        out.append(_setting("sha256", sha[:16], style=""))
    if config.max_new_tokens is not None:
        out.append(Text(f"{config.max_new_tokens} new tokens"))
    if config.temperature is not None:
        out.append(Text(f"T={config.temperature:g}"))
    out.append(Text(f"seed {'?' if config.seed is None else config.seed}", style="dim"))
    return flow(out, width)


def server_groups(servers: list[ServerIdentity]) -> list[list[ServerIdentity]]:
    """The servers to list, one entry each; past MANY_SERVERS, those reporting the same
    settings share one (an unreachable one always has its own)."""
    if len(servers) <= MANY_SERVERS:
        return [[s] for s in servers]
    groups: dict[tuple, list[ServerIdentity]] = {}
    for s in servers:
        key = (
            ("error", s.url)
            if s.error
            else tuple(repr(s.get(k)) for k in ("engine", *SUMMARY_KEYS))
        )
        groups.setdefault(key, []).append(s)
    return list(groups.values())


class ServersPanel(Static):
    """The panel naming each server of the run with the settings that matter."""

    DEFAULT_CLASSES = "panel"  # its look: `.panel` in app.tcss
    COMPONENT_CLASSES = {
        "servers--ok",
        "servers--warn",
        "servers--bad",
        "servers--strong",
        "servers--rec",
    }

    _shown: tuple | None = None

    def on_resize(self) -> None:
        """Lay the settings out again for the new width."""
        # the settings are laid out for a width: lay them out again for the new one
        if self._shown is not None:
            self.show(*self._shown)
            # an update made while the screen is being resized does not reach the auto height:
            # widened from 80x24, the panel kept the one line of the short terminal
            self.call_after_refresh(self.refresh, layout=True)

    def show(self, store: SessionStore | None, status: RunStatus) -> None:
        """Show the run's servers and prompt set."""
        self._shown = (store, status)
        width = self.content_size.width or None
        lines: list[Text] = []
        run = store.run if store else None
        config = store.config if store else RecordedConfig()
        if store is not None and run is not None and self.screen.has_class("-short"):
            # a short terminal: the settings fold to one line (app.tcss shows one line)
            groups = server_groups(store.identities())
            lines.append(one_line([compact_settings(g[0], self) for g in groups], width))
        elif store is not None and run is not None:
            for members in server_groups(store.identities()):
                lines.append(server_text(members[0], config, self, width))
                if len(members) > 1:  # a fleet's replicas: one line per distinct settings
                    lines.append(
                        Text(
                            f"  + {len(members) - 1} more with these settings (c compares them)",
                            style="dim",
                        )
                    )
            if run.prompt_set:
                lines.append(prompt_text(run.prompt_set, config, width))
        elif status.message:
            lines.append(safe(status.message, style="dim"))
            if status.error:  # the attempt before this one
                lines.append(safe(status.error, style=part(self, "servers--bad"), limit=300))
        else:
            lines.append(Text("waiting for the first event…", style="dim"))
        if status.retry_in is not None:
            t = Text(no_wrap=True)
            warn = part(self, "servers--warn")
            t.append("⟳ ", style=warn)
            t.append(
                f"no server answered; retrying in {status.retry_in} s "
                f"(attempt {status.retry_attempt + 1}, backoff up to 30 s) · q quits",
                style=warn,
            )
            lines.append(t)
        out = Text("\n").join(lines)
        self.update(out)
        n = len(run.servers) if run else 0
        self.border_title = "server" if n <= 1 else f"servers ({n})"
        if status.recording:
            rec = part(self, "servers--rec")
            self.border_subtitle = Text.assemble(("● rec ", rec), safe(status.recording))
        else:
            self.border_subtitle = ""
