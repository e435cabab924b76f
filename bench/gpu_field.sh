#!/usr/bin/env bash
# docs/FIELD_NOTES.md sections 1-2 on nvidia-h200-x2: deterministic inference on; tp1 graphs-off with dumper hooks
# (A, GPU0), tp1 graphs-on (C, GPU1), tp2 graphs-on (B, GPUs 0+1). kltui check side by side, --repeat 2, then dumps on A.
set -uo pipefail
source /root/carry/env.sh; export PYTHONPATH=$PWD:$PYTHONPATH; PY=/opt/torch/.venv/bin/python3
O=$OUT; mkdir -p /root/dumps
M=/root/tiny-llama
COMMON="--model-path $M --attention-backend triton --sampling-backend pytorch --host 127.0.0.1 --enable-deterministic-inference --mem-fraction-static 0.25"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM -- -$p 2>/dev/null; done; sleep 3; for p in "${PIDS[@]}"; do kill -KILL -- -$p 2>/dev/null; done; }
trap cleanup EXIT
wait_ready() { local port=$1 t0=$SECONDS; until curl -sf -m 2 127.0.0.1:$port/health_generate >/dev/null; do
  [ $((SECONDS-t0)) -lt 240 ] || { echo "port $port NOT READY"; return 1; }; sleep 1; done; echo "port $port ready after $((SECONDS-t0)) s"; }
CUDA_VISIBLE_DEVICES=0 DUMPER_ENABLE=0 DUMPER_SERVER_PORT=reuse DUMPER_NON_INTRUSIVE_MODE=all DUMPER_DIR=/root/dumps \
  setsid $PY -m sglang.launch_server $COMMON --port 30001 --disable-cuda-graph --disable-prefill-cuda-graph > $O/serverA.log 2>&1 & PIDS+=($!)
CUDA_VISIBLE_DEVICES=1 setsid $PY -m sglang.launch_server $COMMON --port 30003 > $O/serverC.log 2>&1 & PIDS+=($!)
wait_ready 30001; wait_ready 30003
CUDA_VISIBLE_DEVICES=0,1 setsid $PY -m sglang.launch_server $COMMON --port 30002 --tp 2 > $O/serverB.log 2>&1 & PIDS+=($!)
wait_ready 30002 || tail -30 $O/serverB.log
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
$PY -c "import sglang,torch;print('sglang',sglang.__version__,'torch',torch.__version__)"
for p in 30001 30002 30003; do curl -s 127.0.0.1:$p/server_info > $O/server_info_$p.json; done
export KLTUI_RUNS_DIR=$O/runs
timeout 200 $PY -m kltui check --server 127.0.0.1:30001 --server 127.0.0.1:30003 --server 127.0.0.1:30002 \
  --samples 32 --max-new-tokens 256 --max-prompt-tokens 1500 --repeat 2 --json $O/check.json --md $O/check.md > $O/check.txt 2>&1
echo "check rc=$?"; cat $O/check.txt | tail -80
timeout 150 $PY -m kltui dumps --server 127.0.0.1:30001 --dump-dir /root/dumps --prompt-tokens 64 --new-tokens 8 --json $O/dumps.json --full > $O/dumps.txt 2>&1
echo "dumps rc=$?"; tail -45 $O/dumps.txt
