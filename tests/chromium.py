"""The headless Chromium every browser test starts: where it is, and the flags that keep it off
the network (this machine's closed network refuses its background connections, many at a time)."""

from __future__ import annotations

import shutil

CHROMIUM = next(
    (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None
)
HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
