"""The dashboard's driver under `kltui web`: Textual's WebDriver, made to end the process when
its browser tab (the textual-serve process relaying it) goes away.

Textual's WebDriver alone outlives its client: when textual-serve dies its input thread meets
end of file on stdin and stops without a word, and the app goes on running (and measuring, and
sending requests to the servers) with nobody to see it; a write to the closed stdout raises
BrokenPipeError from inside a screen refresh, leaving the refresh to be retried. And an exit
that is asked for (the tab closed, SIGINT, SIGTERM) only posts a message, which a stuck app
never reads. So here: end of input or a failed write ends the app, and any exit that was asked
for is made certain by a hard exit GRACE_S seconds later.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading

from textual import messages
from textual.drivers.web_driver import WebDriver

from kltui.errors import EXIT_INTERRUPTED

GRACE_S = 5.0  # time for a clean exit (the recording's last line) before the hard one


class ClientGoneWebDriver(WebDriver):
    """WebDriver that exits when its client goes away, and exits for sure when asked to."""

    _exiting = False

    def start_application_mode(self) -> None:
        """Start, exiting on SIGINT, SIGTERM and SIGHUP."""
        self._loop = asyncio.get_running_loop()
        super().start_application_mode()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            # Replaces WebDriver's loop handlers: those run only when the event loop does, and a
            # posted ExitApp alone is not enough. A plain handler also runs while the main
            # thread waits in a write to a pipe nobody reads.
            self._loop.remove_signal_handler(sig)
            signal.signal(sig, lambda *_: self.request_exit())
        # WebDriver keeps its writer as a partial; any callable of the same shape does
        self._write = self._guarded_write  # type: ignore[assignment]

    def _guarded_write(self, data: bytes) -> int:
        """os.write to stdout; the client closed it: drop the frame and exit."""
        try:
            return os.write(self.fileno, data)
        except OSError:
            self.request_exit()
            return len(data)

    def run_input_thread(self) -> None:
        """Read input; exit when the input ends (the tab went away)."""
        super().run_input_thread()
        if not self.exit_event.is_set():  # end of input, not our own shutdown
            self.request_exit()

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        """Exit when textual-serve says the tab closed."""
        if packet_type == "quit":  # textual-serve: the tab closed
            self.request_exit()
            return
        super().on_meta(packet_type, payload)

    def request_exit(self) -> None:
        """Ask the app to exit (thread-safe, once); GRACE_S seconds later, exit regardless."""
        if self._exiting:
            return
        self._exiting = True
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            try:
                asyncio.run_coroutine_threadsafe(
                    self._app._post_message(messages.ExitApp()), loop=loop
                )
            except RuntimeError:  # the loop already stopped: nothing left to ask
                pass
        timer = threading.Timer(GRACE_S, os._exit, args=(EXIT_INTERRUPTED,))
        timer.daemon = True
        timer.start()
