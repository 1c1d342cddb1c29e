#!/usr/bin/env bash
# The last GPU checks of issues 7 and 8 in one device call (under 600 s; at most 8 files come back, so the lab's
# outputs travel as one archive): dynamic shared memory above 48 KB (CUDA C++), the lab's acceptance with the
# demo's matmul (benchmarks/h200_issue8.sh), the lab's gpu test, and the measurement gpu tests. Wheels: .whl.
set -u
OUT=${OUT:-/tmp/kt-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $(ls .whl/*.whl .whl/*/*.whl) \
  >/dev/null 2>&1
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
t() { timeout "$1" python3 -m pytest "${@:3}" -rA -p no:cacheprovider > "$OUT/$2.log" 2>&1; echo "rc $?" >> "$OUT/$2.log"; }
t 120 shared tests/gpu/test_cuda_gpu.py -k dynamic -s
timeout 330 bash benchmarks/h200_issue8.sh > /dev/null 2>&1
t 90 lab_gpu tests/gpu/test_lab_gpu.py
t 120 measure tests/gpu/test_measure_gpu.py
