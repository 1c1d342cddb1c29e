#!/usr/bin/env bash
# One device call: environment facts, the gpu tests, and a bounded tune of triton_matmul at 4096³.
# Usage on the device machine: bash benchmarks/h200_check.sh [BUDGET]   (logs and the store under $OUT)
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
timeout 300 python3 -m pytest tests/gpu -q -rA 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
KERNTUNE_HOME="$OUT/store" timeout 250 python3 -m kerntune tune examples/triton_matmul --strategy random \
    --budget "${1:-16}" --json > "$OUT/matmul_check.json" 2> "$OUT/matmul_check.err"
echo "tune exit $?"
KERNTUNE_HOME="$OUT/store" python3 -m kerntune show last | tee "$OUT/matmul_check.txt" | tail -30
tail -5 "$OUT/matmul_check.err"
