"""The dumper drill-down run from the TUI: probe the server for SGLang's dumper hooks; without
them, the exact launch settings and the command (what `kltui dumps` prints); with them, the
capture and the analysis in a worker, step by step, then the module table (DumpsScreen).

The work is `kltui.dumps.run.drill_down`, the same as `kltui dumps`; this screen only shows it.
torch is imported inside the worker (a thread), never when the TUI starts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import LoadingIndicator, Static

from kltui.tui.screens.modal import BoxModal
from kltui.untrusted import safe


@dataclass(frozen=True)
class DumpsRequest:
    """What the TUI's dumper drill-down needs: server, dump folder, command, key."""

    server: str
    dump_dir: Path
    command: str  # `kltui dumps ...` for this server and folder, shown when the hooks are missing
    api_key: str | None = None
    timeout: float = 600.0
    prompt_tokens: int = 32
    new_tokens: int = 8


class DumpsRunScreen(BoxModal):
    """The modal running a dumper capture and analysis from the TUI."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close", id="dumps-run.close")]

    BOX_TITLE = "dumper drill-down"
    BOX_SUBTITLE = "esc closes (a capture in progress is stopped)"

    def __init__(self, request: DumpsRequest) -> None:
        super().__init__()
        self.request = request
        self.steps: list[str] = []
        self.outcome = "running"  # running | hooks-missing | error | done

    def body(self) -> ComposeResult:
        """The steps and result, with a spinner while the capture runs."""
        yield Static(id="dumps-run-log")
        yield LoadingIndicator()

    def on_mount(self) -> None:
        """Start the capture."""
        self.run_worker(self._run(), group="dumps", exclusive=True, exit_on_error=False)

    def _step(self, text: str) -> None:
        self.steps.append(text)
        self.query_one("#dumps-run-log", Static).update(
            Group(*[Text("· ").append_text(safe(s)) for s in self.steps])
        )

    async def _run(self) -> None:
        from kltui.dumps.capture import HooksMissing
        from kltui.dumps.passes import NotIdle
        from kltui.dumps.run import client_for, drill_down
        from kltui.engines.errors import EngineError
        from kltui.errors import UsageError
        from kltui.words.dumps import verdict_words

        r = self.request
        try:
            async with client_for(r.server, r.api_key, r.timeout) as client:
                result = await drill_down(
                    client,
                    r.server,
                    r.dump_dir,
                    prompt_tokens=r.prompt_tokens,
                    new_tokens=r.new_tokens,
                    step=self._step,
                    # a shared server is asked about before the flushes, as before a run
                    confirm_flush=getattr(self.app, "confirm_flush", None),
                    words=verdict_words,
                )
        except HooksMissing as e:
            self._hooks_missing(str(e))
            return
        except NotIdle as e:
            self._fail(f"the server was not idle while dumping: {e}")
            return
        except (EngineError, UsageError, OSError) as e:
            self._fail(str(e))
            return
        self.outcome = "done"
        from kltui.tui.screens.dumps import DumpsScreen

        self.app.switch_screen(DumpsScreen(result))

    def _stop_spinner(self) -> None:
        for w in self.query(LoadingIndicator):
            w.remove()

    def _hooks_missing(self, why: str) -> None:
        from kltui.dumps.capture import launch_settings

        self.outcome = "hooks-missing"
        self._stop_spinner()
        text = (
            f"{why}\n\n{launch_settings(str(self.request.dump_dir))}\n\n"
            f"then run here (u again) or in a shell:\n  {self.request.command}"
        )
        self.query_one("#dumps-run-log", Static).update(
            Group(*[safe(line) for line in text.splitlines()])
        )

    def _fail(self, line: str) -> None:
        self.outcome = "error"
        self._stop_spinner()
        self._step(f"error: {line}")
        self.app.notify(f"dumper drill-down: {line}", severity="error", timeout=10, markup=False)
