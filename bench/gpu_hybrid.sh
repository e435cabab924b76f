#!/usr/bin/env bash
# Issue 57 on one GPU (docs/FIELD_NOTES.md section 18): tiny Qwen3-Next-, Nemotron-H- and
# gpt-oss-shaped checkpoints (../shared/gpu_sglang/bin/make_tiny_hybrid.py, made on the machine)
# served by real SGLang 0.5.17 with its Mamba defaults, all three at once on one card; then
# bench/gpu_hybrid.py runs kltui and SGLang's own helpers beside it on each. After the README's
# setup calls 1 and 2 (stash c01; stash c02 + install + model + kltui):
#
#   bash bench/gpu_hybrid.sh          (device tool, carry [".gpu/bin"]; about 6-8 minutes)
#
# KINDS="q3n nh go" by default; SERVER_ARGS adds flags to every server.
set -uo pipefail
PY=/opt/torch/.venv/bin/python3
OUTD=${OUT:-/tmp/gpu-hybrid}
LOGS=/tmp/gpu-hybrid-logs  # $OUT brings back 8 files: the logs' tails go to one
mkdir -p "$OUTD" "$LOGS"
[ -f /root/carry/env.sh ] || { echo "FATAL: /root/carry/env.sh missing: run the setup calls 1 and 2 first"; exit 1; }
# shellcheck disable=SC1091
source /root/carry/env.sh
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
declare -A BACKEND=([q3n]=triton [nh]=flashinfer [go]=triton)
declare -A PORT=([q3n]=30011 [nh]=30012 [go]=30013)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- -"$p" 2>/dev/null; done; sleep 3
  for p in "${PIDS[@]}"; do kill -KILL -- -"$p" 2>/dev/null; done; }
trap cleanup EXIT
KINDS=${KINDS:-q3n nh go}
for k in $KINDS; do
  [ -d /root/$k ] || "$PY" .gpu/bin/make_tiny_hybrid.py "$k" /root/$k /root/tiny-llama > "$LOGS/make_$k.log" 2>&1 \
    || { echo "make $k failed"; tail -20 "$LOGS/make_$k.log"; }
  setsid "$PY" -m sglang.launch_server --model-path /root/$k --attention-backend "${BACKEND[$k]}" \
    --sampling-backend pytorch --host 127.0.0.1 --port "${PORT[$k]}" --mem-fraction-static 0.25 \
    ${SERVER_ARGS:-} > "$LOGS/server_$k.log" 2>&1 &
  PIDS+=($!)
done
t0=$SECONDS
SPECS=()
for k in $KINDS; do
  until curl -sf -m 2 "127.0.0.1:${PORT[$k]}/health_generate" >/dev/null; do
    [ $((SECONDS - t0)) -lt 330 ] || { echo "$k NOT READY after 330 s"; tail -30 "$LOGS/server_$k.log"; break; }
    sleep 2
  done
  curl -sf -m 2 "127.0.0.1:${PORT[$k]}/health" >/dev/null && { echo "$k ready after $((SECONDS - t0)) s"; SPECS+=("$k=http://127.0.0.1:${PORT[$k]}"); }
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$PY" -c "import sglang,torch;print('sglang',sglang.__version__,'torch',torch.__version__)"
[ ${#SPECS[@]} -gt 0 ] && "$PY" bench/gpu_hybrid.py "${SPECS[@]}" --out "$OUTD/res" "$@"
for k in $KINDS; do echo "== $k"; grep -h -m3 -E "Mamba Cache is allocated|hybrid_ssm|sliding window memory pool" "$LOGS/server_$k.log"
  { echo "== $k"; tail -40 "$LOGS/server_$k.log"; } >> "$OUTD/servers_tail.log"; done
# kltui's recordings and console text of every run, one file ($OUT brings back at most 8)
tar -czf "$OUTD/kltui_runs.tar.gz" -C "$OUTD/res-work" $(cd "$OUTD/res-work" && ls *.kltui.jsonl *.txt 2>/dev/null) \
  && ls -la "$OUTD/kltui_runs.tar.gz" && rm -rf "$OUTD/res-work"
