#!/usr/bin/env bash
# The spine's H200 acceptance run: the gpu tests, then triton_matmul exhaustively at 4096³ bf16 (torch.matmul timed and gated
# in the same run), then triton_rmsnorm. Logs and the store land under $OUT.
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1 KERNTUNE_HOME="$OUT/store"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
timeout 200 python3 -m pytest tests/gpu -q -rA 2>&1 | tee "$OUT/gpu_tests.log" | tail -8
start=$(date +%s)
timeout 300 python3 -m kerntune tune examples/triton_matmul --json > "$OUT/matmul.json" 2> "$OUT/matmul.err"
echo "matmul tune exit $? in $(( $(date +%s) - start )) s"
python3 -m kerntune show last > "$OUT/matmul.txt"; head -40 "$OUT/matmul.txt"
start=$(date +%s)
timeout 90 python3 -m kerntune tune examples/triton_rmsnorm --json > "$OUT/rmsnorm.json" 2> "$OUT/rmsnorm.err"
echo "rmsnorm tune exit $? in $(( $(date +%s) - start )) s"
python3 -m kerntune show last | tee "$OUT/rmsnorm.txt" | head -30
