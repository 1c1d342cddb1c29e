#!/usr/bin/env bash
# One device call: issue 10's pool-of-one check first (benchmarks/h200_issue10.sh), then the gpu tests that cover
# the tune path it shares (TESTS), given what is left of LIMIT seconds. Logs: $OUT/issue10.log, $OUT/issue4.log.
LIMIT=${LIMIT:-560}
bash benchmarks/h200_issue10.sh
left=$((LIMIT - SECONDS))
echo "== issue 10 took ${SECONDS} s; tests get ${left} s" | tee -a "${OUT:-/tmp/kt-out}/issue10.log"
STEPS=tests TESTS="${TESTS:-tests/gpu/test_triton_gpu.py tests/gpu/test_live_gpu.py}" TESTS_LIMIT=$left \
  bash benchmarks/h200_issue4.sh
