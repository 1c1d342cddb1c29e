#!/usr/bin/env bash
# Issue 4 (search) on the H200, steps chosen by STEPS; every step packs its files into $OUT/STEP.tgz (a device
# call returns at most 8 files). Wheels: .whl (carry it).
#   anchors     the 10 LLM shapes: one kerntune run over TUNE_SHAPES (default: all; default strategy, BUDGET per
#               shape, no confirmation; PRIOR= a tune.json of winners found by an earlier run for the other shapes),
#               then kerntune's winners, torch.matmul and the tutorial's triton.autotune gated and timed side by side
#               in one process (benchmarks/search_vs_anchors.py, default protocol, ROUNDS rounds)
#   exhaustive  the efficiency space (triton_matmul bf16 M=16, N=K=4096: 1,232 configs for sm_90), every config,
#               compile-ahead workers (benchmarks/h200_efficiency.sh), under the shortened protocol WARMUP_MS/SAMPLE_MS
#   races       RACE_RUNS on that space, same protocol: the default strategy (raceN: seed N) and the serial
#               compile-then-time loop (serial)
#   throughput  configs timed per minute at one protocol for both: the serial compile-then-time loop and the same
#               random order with compile-ahead workers, SERIAL_S s each, under the race's screening measurement
#               (1/16 of WARMUP_MS/SAMPLE_MS: what the default strategy times most configs with)
#   side        the exhaustive best and each race's winner (this call's, or from RUNS_FROM= folders holding an
#               earlier call's reports) timed side by side under the default protocol (benchmarks/time_configs.py)
#   tests       the gpu tests TESTS (default: tests/gpu/test_measure_gpu.py)
NAME=issue4
DEFAULT_STEPS=anchors
. benchmarks/h200_env.sh
export WARMUP_MS=${WARMUP_MS:-30} SAMPLE_MS=${SAMPLE_MS:-200}
pack() { tar czf "$OUT/$1.tgz" -C "$W" "$1"; }
if want anchors; then
  step "anchors: tune ${TUNE_SHAPES:-the 10 shapes} (${BUDGET:-20s/shape})"
  A="$W/anchors"; mkdir -p "$A"
  [ -n "${PRIOR:-}" ] && cp "$PRIOR" "$A/tune.json"
  KERNTUNE_HOME="$A/store" KERNTUNE_CONFIRM_ROUNDS=0 timeout "${TUNE_LIMIT:-400}" python3 benchmarks/search_vs_anchors.py \
    --out "$A" --tune --shapes "${TUNE_SHAPES:-}" --budget "${BUDGET:-20s/shape}" --tag s6 > "$A/tune.log" 2>&1
  echo "tune exit $?" | tee -a "$LOG"; grep -v '^\[' "$A/tune.log" | tail -14 >> "$LOG"
  python3 benchmarks/export_candidates.py "$A/store" "$A/tune-candidates.csv" >> "$LOG" 2>&1
  step "anchors: compare"
  timeout "${COMPARE_LIMIT:-170}" python3 benchmarks/search_vs_anchors.py --out "$A" --compare --rounds "${ROUNDS:-2}" \
    --tag s6 > "$A/compare.log" 2>&1
  echo "compare exit $?" | tee -a "$LOG"; tail -8 "$A/compare.log" >> "$LOG"
  rm -f "$A/store/kerntune.sqlite"*; pack anchors
fi
if want exhaustive; then
  step "exhaustive (warm-up $WARMUP_MS ms, budget $SAMPLE_MS ms)"
  OUT="$W/exhaustive" RUNS=exhaustive EXHAUSTIVE_LIMIT=${EXHAUSTIVE_LIMIT:-420} bash benchmarks/h200_efficiency.sh \
    >> "$LOG" 2>&1
  pack exhaustive
fi
if want races; then
  step "${RACE_RUNS:=race1 race2 race3 race4 race5 serial} (warm-up $WARMUP_MS ms, budget $SAMPLE_MS ms)"
  OUT="$W/races" RUNS="$RACE_RUNS" RACE_LIMIT=${RACE_LIMIT:-70} SERIAL_S=${SERIAL_S:-40} \
    bash benchmarks/h200_efficiency.sh >> "$LOG" 2>&1
  pack races
fi
if want throughput; then
  step "throughput: serial vs pipelined at the screening measurement"
  OUT="$W/throughput" RUNS="serial pipelined" SERIAL_S=${SERIAL_S:-40} \
    WARMUP_MS=$(python3 -c "print($WARMUP_MS / 16)") SAMPLE_MS=$(python3 -c "print($SAMPLE_MS / 16)") \
    bash benchmarks/h200_efficiency.sh >> "$LOG" 2>&1
  pack throughput
fi
if want side; then
  step "the winners side by side (default protocol)"
  S="$W/side"; mkdir -p "$S"
  configs=()
  for run in exhaustive race1 race2 race3 race4 race5; do
    for d in "$W/exhaustive" "$W/races" ${RUNS_FROM:-}; do
      [ -s "$d/$run.json" ] && { configs+=("$run=@$d/$run.json"); break; }
    done
  done
  timeout "${SIDE_LIMIT:-120}" python3 benchmarks/time_configs.py --shape 16,4096,4096 --rounds 3 \
    --out "$S/side_by_side.json" "${configs[@]}" > "$S/side_by_side.log" 2>&1
  echo "side by side exit $?" | tee -a "$LOG"; tail -25 "$S/side_by_side.log" >> "$LOG"
  pack side
fi
if want tests; then
  step "gpu tests: ${TESTS:=tests/gpu/test_measure_gpu.py}"
  mkdir -p "$W/tests"
  timeout "${TESTS_LIMIT:-250}" python3 -m pytest $TESTS -v -rA --durations=0 -p no:cacheprovider \
    > "$W/tests/tests.log" 2>&1
  echo "tests exit $?" | tee -a "$LOG"; tail -12 "$W/tests/tests.log" >> "$LOG"
  pack tests
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$LOG"
