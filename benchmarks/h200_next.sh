#!/usr/bin/env bash
# The next session's H200 calls, each under 600 s, every step bounded and writing straight into $OUT (at most 8
# files come back per call; what a step wrote survives a later step's timeout). Wheels: .whl (carry it).
#   PHASE=A: the gpu tests not yet run on the H200 (CUDA C++ backend; the live path again), -rA for figures
#   PHASE=B: the full 64-shape sweep (h200_issue6.sh's, 400 s) and `kerntune train` on it (issue 6 table quality)
#   PHASE=C: the other gpu tests (regressions), 500 s
set -u
OUT=${OUT:-/tmp/kt-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv; git log --oneline -1
  python3 -c "import cuda.core, triton, torch; print('cuda.core', cuda.core.__version__, 'triton', triton.__version__, 'torch', torch.__version__)"
} > "$OUT/gpu.txt" 2>&1
case ${PHASE:-A} in
  A) timeout 540 python3 -m pytest tests/gpu/test_cuda_gpu.py tests/gpu/test_live_gpu.py -v -rA -s \
       -p no:cacheprovider > "$OUT/tests_A.log" 2>&1; echo "pytest rc $?" >> "$OUT/tests_A.log" ;;
  B) STEPS=sweep SWEEP_LIMIT=420 W=/tmp/w6 bash benchmarks/h200_issue6.sh ;;
  C) timeout 540 python3 -m pytest tests/gpu -v -rA -p no:cacheprovider --deselect tests/gpu/test_cuda_gpu.py \
       --deselect tests/gpu/test_live_gpu.py > "$OUT/tests_C.log" 2>&1; echo "pytest rc $?" >> "$OUT/tests_C.log" ;;
esac
