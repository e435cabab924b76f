"""Process identities and the watchdog for real-engine servers: kltui's own
(kltui/launch/supervisor.py), loaded from its file so that this tier keeps running on the bare
standard library (manage.py runs with `python3 -E -s`, kltui need not be installed).

A process is identified by (pid, start time in clock ticks since boot, boot id): a pid alone can be
reused once the process is gone; the three together cannot. Nothing here matches by name.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

WATCHDOG = Path(__file__).resolve().parents[2] / "kltui" / "launch" / "supervisor.py"

_spec = importlib.util.spec_from_file_location("kltui_launch_supervisor", WATCHDOG)
if _spec is None or _spec.loader is None:
    raise ImportError(f"cannot load kltui's watchdog from {WATCHDOG}")
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)

PROC = _mod.PROC
boot_id = _mod.boot_id
stat = _mod.stat
identity = _mod.identity
same = _mod.same
group_members = _mod.group_members
stop_group = _mod.stop_group
read_record = _mod.read_record
write_record = _mod.write_record
