#!/usr/bin/env bash
# Issue 6 on the H200, one device call (about 520 s): the dispatch cost, the transformer demo tuned, deployed and
# verified (tests/gpu/test_live_gpu.py, with a table keyed to another SM count as the negative check), then a 64-shape sweep and
# `kerntune train` scored on held-out shapes. Every step has its own limit and writes straight into $OUT, so a
# step that runs long still leaves the earlier results. Wheels for optuna and friends are expected in .whl.
NAME=issue6
DEFAULT_STEPS="dispatch demo sweep"
. benchmarks/h200_env.sh

if want dispatch; then
step dispatch cost
timeout 60 python3 benchmarks/dispatch_cost.py --gpu > "$OUT/dispatch_cost.json" 2>> "$LOG"
fi

if want demo; then
step demo: tune, deploy, verify with the end-to-end A/B, and a table keyed to another SM count
timeout 330 python3 -m pytest tests/gpu/test_live_gpu.py -q -rA -s -p no:cacheprovider > "$OUT/live_test.log" 2>&1
echo "live test exit $?" | tee -a "$LOG"
fi

if want sweep; then
step sweep: 64 shapes x 16 configs, exhaustive, short protocol
SHAPES=$(python3 - <<'PY'
import random
shapes = [f"M={m},N={n},K={k}" for m in (16, 32, 64, 128, 256, 512, 1024, 2048)
          for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 4096), (4096, 8192), (2048, 2048),
                       (1024, 4096), (6144, 4096))]
random.Random(0).shuffle(shapes)  # a cut-short sweep still spans the sizes
print(" ".join(f"--shape {s}" for s in shapes))
PY
)
KERNTUNE_CONFIRM_ROUNDS=0 KERNTUNE_WARMUP_MS=5 KERNTUNE_SAMPLE_BUDGET_MS=25 KERNTUNE_MIN_SAMPLES=5 \
  timeout "${SWEEP_LIMIT:-230}" python3 -m kerntune tune benchmarks/specs/matmul_sweep --dtype bfloat16 \
  --strategy exhaustive $SHAPES > "$W/sweep.log" 2>&1
echo "sweep exit $?" | tee -a "$LOG"; grep -v "^\[" "$W/sweep.log" | tail -5 >> "$LOG"
step train
python3 -m kerntune train last --table "$W/trained.json" --holdout-every 3 --json > "$OUT/train.json" 2>> "$LOG"
echo "train exit $?" | tee -a "$LOG"
python3 benchmarks/export_candidates.py "$W/store" "$W/candidates.csv" >> "$LOG" 2>&1
tar czf "$OUT/data.tgz" -C "$W" --exclude='*.sqlite*' --exclude=logs --exclude='cache-*' . 2>> "$LOG"
fi
step done
