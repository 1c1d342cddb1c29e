#!/usr/bin/env bash
# The H200 acceptance runs of the search and know-why issues, in three calls of under 600 s (PHASE=A, B, C).
# Results go to $WORK (default /tmp/w) and are packed into one archive under $OUT (a device call returns at
# most 8 files). Wheels for optuna and friends are expected in .whl (see benchmarks/RESULTS.md).
#   A: every gpu test (-rA prints the figures of test_know_why_gpu), the dispatch-cost benchmark, then the
#      default strategy with seeds 1-5
#      on the efficiency space (h200_efficiency.sh, shortened protocol)
#   B: the exhaustive run on the same space and the serial compile-then-time loop
#   C: the 10 LLM shapes: one tune (TUNE_BUDGET per shape, no confirmation), then the side-by-side compare
set -u
OUT=${OUT:-/tmp/kt-out}
WORK=${WORK:-/tmp/w}
mkdir -p "$OUT" "$WORK"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active \
  --format=csv | tee "$WORK/gpu-$PHASE.txt"
git log --oneline -1 | tee -a "$WORK/gpu-$PHASE.txt"
case $PHASE in
  A)
    timeout "${TESTS_LIMIT:-300}" python3 -m pytest tests/gpu -q -rA 2>&1 | tee "$WORK/gpu_tests.log" | tail -30
    timeout 60 python3 benchmarks/dispatch_cost.py --gpu | tee "$WORK/dispatch_cost.json"
    OUT=$WORK RACE_LIMIT=${RACE_LIMIT:-70} RUNS="race1 race2 race3 race4 race5" bash benchmarks/h200_efficiency.sh
    ;;
  B)
    OUT=$WORK EXHAUSTIVE_LIMIT=${EXHAUSTIVE_LIMIT:-500} SERIAL_S=${SERIAL_S:-45} RUNS="exhaustive serial" \
      bash benchmarks/h200_efficiency.sh
    ;;
  C)
    KERNTUNE_CONFIRM_ROUNDS=0 KERNTUNE_HOME="$WORK/store" timeout "${TUNE_LIMIT:-380}" python3 \
      benchmarks/search_vs_anchors.py --out "$WORK" --tune --budget "${TUNE_BUDGET:-25s/shape}" --tag c \
      > "$WORK/tune.log" 2>&1
    echo "tune exit $?"; grep -v "^\[" "$WORK/tune.log" | tail -14
    timeout "${COMPARE_LIMIT:-190}" python3 benchmarks/search_vs_anchors.py --out "$WORK" --compare --rounds 2 \
      --tag c > "$WORK/compare.log" 2>&1
    echo "compare exit $?"; tail -8 "$WORK/compare.log"
    python3 benchmarks/export_candidates.py "$WORK/store" "$WORK/tune-candidates.csv"
    ;;
esac
cat "$WORK/walls.txt" 2>/dev/null
tar czf "$OUT/phase-$PHASE.tgz" -C "$WORK" --exclude=logs --exclude='*.sqlite*' --exclude='cache-*' .
