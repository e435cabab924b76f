#!/usr/bin/env bash
# docs/FIELD_NOTES.md section 3: does the KV split count explain the divergence? Deterministic, --triton-attention-num-kv-splits 1.
set -uo pipefail
source /root/carry/env.sh; export PYTHONPATH=$PWD:$PYTHONPATH; PY=/opt/torch/.venv/bin/python3; O=$OUT
CUDA_VISIBLE_DEVICES=0 setsid $PY -m sglang.launch_server --model-path /root/tiny-llama --attention-backend triton --sampling-backend pytorch \
  --host 127.0.0.1 --port 30005 --enable-deterministic-inference --triton-attention-num-kv-splits 1 > $O/server.log 2>&1 &
S=$!; trap 'kill -TERM -- -$S; sleep 2; kill -KILL -- -$S' EXIT
t0=$SECONDS; until curl -sf -m 2 127.0.0.1:30005/health_generate >/dev/null; do [ $((SECONDS-t0)) -lt 200 ] || { tail -30 $O/server.log; exit 1; }; sleep 1; done
echo "ready after $((SECONDS-t0)) s"; curl -s 127.0.0.1:30005/server_info | $PY -c "import json,sys;d=json.load(sys.stdin);print({k:d.get(k) for k in ['version','triton_attention_num_kv_splits','triton_attention_split_tile_size','enable_deterministic_inference','attention_backend']})"
KLTUI_RUNS_DIR=$O/runs timeout 150 $PY -m kltui check --server 127.0.0.1:30005 --samples 32 --max-new-tokens 256 --max-prompt-tokens 1500 --json $O/check_splits1.json > $O/check_splits1.txt 2>&1
echo "rc=$?"; grep -v "^[│┃┏┡└]" $O/check_splits1.txt | head -30; grep "│" $O/check_splits1.txt
