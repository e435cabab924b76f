"""Servers kltui starts itself (`kltui ablate --launch`): `server.LaunchedServer` on a free
loopback port, under the watchdog of `supervisor.py`, so that none outlives kltui (Linux only).

Kept free of imports: `supervisor.py` must also load on its own as a bare script, and
scripts/real_engines loads it by path with nothing of kltui importable.
"""
