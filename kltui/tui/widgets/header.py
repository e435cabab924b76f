"""Top of the dashboard: what is running (live or replay, verdict) and against what.

The server line lists exactly the settings that decide what a result means; a number read
without them (deterministic inference off? radix cache off?) is easy to misjudge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual.color import Color
from textual.widgets import Static

from kltui.session import SessionStore
from kltui.tui.text import safe


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


def badge(colour: str | None, fallback: str = "yellow") -> str:
    """Bold text on `colour`, in black or white, whichever reads on it."""
    try:
        bg = Color.parse(colour or fallback)
    except Exception:  # noqa: BLE001 - theme variables may be any CSS colour expression
        return f"bold reverse {fallback}"
    return f"bold {bg.get_contrast_text(1.0).hex} on {bg.hex}"


def _local(ts: float | None) -> str:
    if not ts:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


class TitleBar(Static):
    DEFAULT_CSS = """
    TitleBar { height: 1; background: $panel; color: $foreground; }
    """

    def show(self, store: SessionStore | None, status: RunStatus | None, theme_vars: dict) -> None:
        status = status or RunStatus()
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" kltui ", style=badge(theme_vars.get("primary"), "blue"))
        t.append(" ")
        if status.mode == "replay":
            t.append(" ▶ REPLAY ", style=badge(theme_vars.get("warning")))
            t.append(" ")
            t.append_text(safe(status.replay_label, limit=90))
        else:
            if status.running:
                t.append("● ", style=theme_vars.get("success", "green"))
                t.append("LIVE", style="bold")
            else:
                t.append("○ idle", style="dim")
        run = store.run if store else None
        if run is not None:
            t.append(f"  run {status.run_no} · id {run.run_id}", style="dim")
            if status.mode != "replay":
                t.append(f" · started {_local(run.started_at)}", style="dim")
            t.append(f" · kltui {run.kltui_version}", style="dim")
        if status.watch:
            t.append("  ⟳ ", style=theme_vars.get("accent", "yellow"))
            t.append(status.watch, style="dim")
        # The verdict sits at the right edge, where the eye lands last.
        right = Text(no_wrap=True)
        if store is not None and store.problems:
            n = len(store.problems)
            fatal = sum(1 for p in store.problems if p.fatal)
            style = theme_vars.get("error" if fatal else "warning", "red")
            right.append(f" {n} problem{'s' if n != 1 else ''} ", style=f"bold {style}")
            right.append(" ")
        fin = store.finished if store else None
        if fin is not None:
            colour = {
                "pass": "success",
                "fail": "error",
                "error": "error",
                "interrupted": "warning",
            }.get(fin.verdict, "warning")
            right.append(f" {fin.verdict.upper()} ", style=badge(theme_vars.get(colour)))
        elif status.running:
            right.append(" RUNNING ", style=badge(theme_vars.get("accent"), "cyan"))
        right.append(" ")
        width = self.size.width or 140
        pad = width - t.cell_len - right.cell_len
        if pad > 0:
            t.append(" " * pad)
        else:
            t.truncate(max(0, width - right.cell_len), overflow="ellipsis")
        t.append_text(right)
        self.update(t, layout=False)  # always one line


def _flag(t: Text, label: str, value, *, style: str = "") -> None:
    t.append(" · ", style="dim")
    t.append(label, style="dim")
    if value is not None:
        t.append(" ")
        t.append_text(safe(value, style=style, limit=48))


def server_text(s: dict, config: dict, vars_: dict) -> Text:
    """One server's identity; every string is untrusted and goes through `safe`."""
    ok = vars_.get("kl-ok", "green")
    warn = vars_.get("kl-warn", "yellow")
    bad = vars_.get("kl-bad", "red")
    t = Text(no_wrap=True, overflow="ellipsis")
    if s.get("error"):
        t.append("✗ ", style=f"bold {bad}")
        t.append_text(safe(s.get("url", "?"), style="bold"))
        t.append("  down: ", style=bad)
        t.append_text(safe(s["error"], limit=160))
        return t
    t.append("✓ ", style=f"bold {ok}")
    t.append_text(safe(s.get("url", "?"), style="bold"))
    t.append("  ")
    engine = s.get("engine", "sglang")
    t.append_text(safe(f"{engine} {s.get('version', '?')}"))
    model = s.get("served_model_name") or s.get("model_path")
    _flag(t, "model", model, style="bold")
    if engine == "vllm":
        # the baseline: SGLang's radix/deterministic/streaming flags do not apply to it
        t.append(" · ", style="dim")
        t.append("baseline", style=f"bold {warn}")
        for label, key in (
            ("max len", "max_model_len"),
            ("dtype", "dtype"),
            ("tp", "tp_size"),
            ("logprobs", "logprobs_mode"),
            ("attn", "attention_backend"),
        ):
            if s.get(key) is not None:
                _flag(t, label, s.get(key))
        return t
    _flag(t, "tp", s.get("tp_size"))
    _flag(t, "dtype", s.get("dtype"))
    _flag(t, "attn", s.get("attention_backend"))
    _flag(t, "page", s.get("page_size"))
    radix_off = bool(s.get("disable_radix_cache"))
    t.append(" · ", style="dim")
    t.append("radix off" if radix_off else "radix on", style=warn if radix_off else "")
    det = bool(s.get("enable_deterministic_inference"))
    t.append(" · ", style="dim")
    t.append("deterministic on" if det else "deterministic off", style=f"bold {ok}" if det else "")
    cg = s.get("cuda_graph")
    if cg is not None:
        t.append(" · ", style="dim")
        t.append("cuda graph on" if cg else "cuda graph off")
    if config.get("streamed", config.get("stream")) is False:
        stream = "stream off"
    else:
        stream = "stream incremental" if s.get("incremental_streaming_output") else "stream cumul."
    t.append(" · ", style="dim")
    t.append(stream)
    fault = s.get("kltui_fault")
    if fault not in (None, "none", ""):
        t.append(" · ", style="dim")
        t.append("fault ", style=f"bold {bad}")
        t.append_text(safe(fault, style=f"bold {bad}", limit=40))
    return t


def prompt_text(ps: dict, config: dict) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("prompts ", style="dim")
    t.append_text(safe(ps.get("source", "?"), style="bold", limit=60))
    t.append(f" · {ps.get('n', '?')} prompts · {ps.get('tokens', '?')} tokens", style="")
    sha = str(ps.get("sha256", ""))
    if sha:
        t.append(" · sha256 ", style="dim")
        t.append_text(safe(sha[:16]))
    mnt = config.get("max_new_tokens")
    if mnt is not None:
        t.append(f" · {mnt} new tokens", style="")
    temp = config.get("temperature")
    if temp is not None:
        t.append(f" · T={temp:g}", style="")
    t.append(f" · seed {config.get('seed', '?')}", style="dim")
    return t


class ServersPanel(Static):
    DEFAULT_CSS = """
    ServersPanel {
        height: auto;
        border: round $primary 40%;
        border-title-color: $primary;
        padding: 0 1;
    }
    """

    def show(self, store: SessionStore | None, status: RunStatus, vars_: dict) -> None:
        lines: list[Text] = []
        run = store.run if store else None
        config = run.config if run else {}
        if run is not None:
            for s in run.servers:
                lines.append(server_text(s, config, vars_))
            if run.prompt_set:
                lines.append(prompt_text(run.prompt_set, config))
        elif status.message:
            lines.append(safe(status.message, style="dim"))
        else:
            lines.append(Text("waiting for the first event…", style="dim"))
        if status.retry_in is not None:
            t = Text(no_wrap=True)
            t.append("⟳ ", style=vars_.get("kl-warn", "yellow"))
            t.append(
                f"no server answered; retrying in {status.retry_in} s "
                f"(attempt {status.retry_attempt + 1}, backoff up to 30 s) · q quits",
                style=vars_.get("kl-warn", "yellow"),
            )
            lines.append(t)
        out = Text("\n").join(lines)
        self.update(out)
        n = len(run.servers) if run else 0
        self.border_title = "server" if n <= 1 else f"servers ({n})"
        if status.recording:
            self.border_subtitle = Text.assemble(("● rec ", "red"), safe(status.recording))
        else:
            self.border_subtitle = ""
