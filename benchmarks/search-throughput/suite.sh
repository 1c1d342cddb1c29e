# about: configs timed per minute at one protocol: the serial compile-then-time loop against compile-ahead workers
# steps: serial pipelined
# needs: gpu
# One space (kernels/triton_gemm, bf16, M=16, N=K=4096), the same random order (--strategy random, seed 0) and
# the same budget (SERIAL_S, 40 s) for both runs, each a fresh command with an empty Triton cache, both under the
# race's screening measurement (WARMUP_MS/16 and SAMPLE_MS/16 of the shortened 30/200 ms protocol: what the
# default strategy times most configs with). Configs per minute come from the candidates' start and finish times
# (benchmarks/export_candidates.py prints them) and from the whole command's wall time.
throughput_run() {
  local name=$1 workers=$2
  local out="$D/runs"; mkdir -p "$out"
  KERNTUNE_HOME="$W/$name" KERNTUNE_COMPILE_WORKERS=$workers TRITON_CACHE_DIR="$W/cache-$name" KERNTUNE_CONFIRM_ROUNDS=0 \
    KERNTUNE_WARMUP_MS=$(python3 -c "print(${WARMUP_MS:-30} / 16)") \
    KERNTUNE_SAMPLE_BUDGET_MS=$(python3 -c "print(${SAMPLE_MS:-200} / 16)") \
    bounded $(( ${SERIAL_S:-40} + 60 )) python3 -m kerntune tune kernels/triton_gemm --shape M=16,N=4096,K=4096 \
    --strategy random --budget "${SERIAL_S:-40}s" --json > "$out/$name.json" 2> "$out/$name.err"
  local code=$?
  export_candidates "$W/$name" "$out/$name-candidates.csv"
  rm -rf "$W/cache-$name" "$W/$name"
  return $code
}
step_serial() { throughput_run serial 0; }
step_pipelined() { throughput_run pipelined -1; }
