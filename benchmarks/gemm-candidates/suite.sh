# about: every kind of candidate for one GEMM call beside the library: the Gluon warp-specialized kernel (kernels/gluon_gemm), cuBLASLt's own algorithms (kernels/cublaslt_gemm, nvmath-python), TunableOp; and ncu counters of the Gluon kernel against cuBLAS
# steps: probe counters
# needs: gpu
# probe:    benchmarks/gemm-candidates/probe.py: the Gluon kernel right at every layout, then timed against torch.mm
#           (events, interleaved, 2x-L2 flush, the device spinning while the host enqueues; the best config checked
#           by CUPTI kernel durations); cuBLASLt's heuristic list timed per call; the cuBLASLt served launcher; TunableOp.
#           PARTS (default gluon,nvmath,serve,tunable), REPS (25); PROBE_CONFIGS (the Gluon configs, by name, comma
#           separated; default all), PROBE_SHAPES (a payoff shapes file: its shapes with M >= PROBE_MIN_M, default
#           1024, timed in place of the built-in list).
# counters: benchmarks/gemm-candidates/counters.py: ncu counters of COUNTER_CONFIG (JSON) and the library at
#           COUNTER_SHAPES (default three compute-bound NT shapes).
step_probe() {
  local out; out=$(step_dir probe)
  bounded "${PROBE_LIMIT:-540}" python3 benchmarks/gemm-candidates/probe.py --parts "${PARTS:-gluon,nvmath,serve,tunable}" \
    --reps "${REPS:-25}" --out "$out" > "$out/probe.log" 2>&1
}
step_counters() {
  local out; out=$(step_dir counters)
  local config=${COUNTER_CONFIG:-'{"BLOCK_N": 256, "SCHEDULE": 0, "STAGES": 3, "GROUP": 8, "RASTER_N": 0, "LOAD_REGS": 40, "MMA_REGS": 232}'}
  # shellcheck disable=SC2086
  bounded "${COUNTERS_LIMIT:-400}" python3 benchmarks/gemm-candidates/counters.py "$out/counters.json" "$config" \
    ${COUNTER_SHAPES:-2048,4096,4096,NT 4096,4096,4096,NT 1024,14336,4096,NT} > "$out/counters.log" 2>&1
}
