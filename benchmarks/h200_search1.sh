#!/usr/bin/env bash
# Search issue, first H200 call: the gpu tests (race, compile-ahead, occupancy pruning included), then one race
# tune of the decode shape M=16, N=K=4096 as a profile of where the time goes. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1 KERNTUNE_HOME="$OUT/store"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton, optuna; print('torch', torch.__version__, 'triton', triton.__version__, 'optuna', optuna.__version__)" | tee -a "$OUT/gpu.txt"
start=$(date +%s)
timeout 240 python3 -m kerntune tune examples/triton_matmul --shape M=16,N=4096,K=4096 --json > "$OUT/decode.json" 2> "$OUT/decode.err"
echo "decode tune exit $? in $(( $(date +%s) - start )) s"
python3 -m kerntune show last > "$OUT/decode.txt" 2>&1; head -60 "$OUT/decode.txt"
tail -5 "$OUT/decode.err"
timeout 300 python3 -m pytest tests/gpu -q -rA -x 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
