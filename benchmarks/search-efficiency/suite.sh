# about: the default strategy (race) against exhaustive search on one 1,232-config space: wall time and the winner's gap
# steps: exhaustive races side
# needs: gpu
# The space: kernels/triton_gemm, bf16, M=16, N=K=4096 (1,232 valid configs for sm_90). Every run is a fresh
# `kerntune tune` with an empty Triton cache and its own store, no confirmation, its wall time taken around the
# whole command, all under one shortened protocol (WARMUP_MS=30, SAMPLE_MS=200; the race's rungs are 1/16 and 1/4
# of it).
# exhaustive: every valid config, compile-ahead workers.
# races:      RACES ("1 2 3 4 5") seeds of the default strategy, and SERIAL_S (40) s of the serial
#             compile-then-time loop (random order, no compile workers).
# side:       the exhaustive best and each race's winner, and torch.matmul, timed side by side in one process
#             under the default protocol (benchmarks/search-efficiency/time_configs.py, 3 rounds of rotating order).
EFF_SHAPE=M=16,N=4096,K=4096
# efficiency_run NAME WORKERS LIMIT ARGS...: one fresh tune of the space into $D/runs/NAME.json (+ candidates CSV).
efficiency_run() {
  local name=$1 workers=$2 limit=$3; shift 3
  local runs="$D/runs"; mkdir -p "$runs"
  KERNTUNE_HOME="$W/$name" KERNTUNE_COMPILE_WORKERS=$workers TRITON_CACHE_DIR="$W/cache-$name" KERNTUNE_CONFIRM_ROUNDS=0 \
    KERNTUNE_WARMUP_MS=${WARMUP_MS:-30} KERNTUNE_SAMPLE_BUDGET_MS=${SAMPLE_MS:-200} \
    bounded "$limit" python3 -m kerntune tune kernels/triton_gemm --shape "$EFF_SHAPE" "$@" --json \
    > "$runs/$name.json" 2> "$runs/$name.err"
  local code=$?
  export_candidates "$W/$name" "$runs/$name-candidates.csv"
  rm -rf "$W/cache-$name" "$W/$name"
  return $code
}
step_exhaustive() { efficiency_run exhaustive -1 "${EXHAUSTIVE_LIMIT:-420}" --strategy exhaustive; }
step_races() {
  local code=0 seed
  for seed in ${RACES:-1 2 3 4 5}; do efficiency_run "race$seed" -1 "${RACE_LIMIT:-70}" --seed "$seed" || code=1; done
  efficiency_run serial 0 $(( ${SERIAL_S:-40} + 60 )) --strategy random --budget "${SERIAL_S:-40}s" || code=1
  return $code
}
step_side() {
  local out run configs=(); out=$(step_dir side)
  for run in exhaustive $(for s in ${RACES:-1 2 3 4 5}; do echo "race$s"; done); do
    [ -s "$D/runs/$run.json" ] && configs+=("$run=@$D/runs/$run.json")
  done
  [ ${#configs[@]} -ge 1 ] || { note "  no run reports in $D/runs: run the exhaustive and races steps first"; return 1; }
  bounded "${SIDE_LIMIT:-120}" python3 benchmarks/search-efficiency/time_configs.py --shape 16,4096,4096 --rounds 3 \
    --out "$out/side_by_side.json" "${configs[@]}" > "$out/side_by_side.log" 2>&1
  local code=$?
  tail -25 "$out/side_by_side.log" >> "$LOG"
  return $code
}
