"""`kltui ablate`'s pure logic: the knobs and their SGLang flags (`knobs.py`), the
configurations of a sweep (`plan.py`) and the sweep's data (`sweep.py`). Nothing here
starts a process or talks to a server: the launcher and the command line build on it."""
