#!/usr/bin/env bash
# Issue 7 on the H200, one device call under 600 s, every step bounded and writing straight into $OUT:
# the CUDA C++ gpu tests, the calibration, examples/cuda_reduction tuned exhaustively (its copy fraction), and
# Kernel Tuner side by side on examples/cuda_matmul (benchmarks/kt_side_by_side.py; EARLIER=summary resumes).
# Wheels: .whl (optuna and friends) and .whl/kt (kernel_tuner and its dependencies); carry .whl.
NAME=issue7
DEFAULT_STEPS="tests calibrate reduction kt"
. benchmarks/h200_env.sh
python3 -c "import kernel_tuner, cupy; print('kernel_tuner', kernel_tuner.__version__, 'cupy', cupy.__version__)" \
  >> "$LOG" 2>&1
if want tests; then
  step gpu tests of the CUDA backend
  timeout 150 python3 -m pytest tests/gpu/test_cuda_gpu.py -v -rA -s -p no:cacheprovider > "$OUT/tests_cuda.log" 2>&1
  echo "pytest exit $?" | tee -a "$LOG"
fi
if want calibrate; then
  step calibrate
  timeout 120 python3 -m kerntune calibrate --json > "$OUT/calibrate.json" 2>> "$LOG"; echo "exit $?" >> "$LOG"
fi
if want reduction; then
  step "cuda_reduction, exhaustive, N=2^26"
  timeout 170 python3 -m kerntune tune examples/cuda_reduction --strategy exhaustive --json > "$OUT/reduction.json" \
    2>> "$LOG"; echo "exit $?" >> "$LOG"
fi
if want kt; then
  step Kernel Tuner side by side
  timeout "${KT_LIMIT:-400}" python3 benchmarks/kt_side_by_side.py "$OUT" ${EARLIER:-} >> "$LOG" 2>&1; echo "exit $?" >> "$LOG"
fi
step done
