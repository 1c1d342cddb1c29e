# about: a dispatch table trained from a sweep, scored on held-out shapes (geometric-mean regret, coverage)
# steps: sweep train
# needs: gpu
# sweep: benchmarks/specs/matmul_sweep (16 configs plus the default) over 64 shapes, M ∈ 16…2048 × 8 (N, K) pairs,
#        shuffled with a fixed seed so a cut-short sweep still spans the sizes; exhaustive, 5 ms warm-up / 25 ms
#        sampling, no confirmation; candidates as CSV (benchmarks/table-quality/train_from_csv.py scores other segmentations
#        offline from it).
# train: `kerntune train last --holdout-every 3`: every third shape held out, the rest train the table.
step_sweep() {
  local shapes
  shapes=$(python3 - <<'PY'
import random
shapes = [f"M={m},N={n},K={k}" for m in (16, 32, 64, 128, 256, 512, 1024, 2048)
          for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 4096), (4096, 8192), (2048, 2048),
                       (1024, 4096), (6144, 4096))]
random.Random(0).shuffle(shapes)
print(" ".join(f"--shape {s}" for s in shapes))
PY
)
  KERNTUNE_CONFIRM_ROUNDS=0 KERNTUNE_WARMUP_MS=5 KERNTUNE_SAMPLE_BUDGET_MS=25 KERNTUNE_MIN_SAMPLES=5 \
    bounded "${SWEEP_LIMIT:-420}" python3 -m kerntune tune benchmarks/specs/matmul_sweep --dtype bfloat16 \
    --strategy exhaustive $shapes > "$D/sweep.log" 2>&1
  local code=$?
  grep -v "^\[" "$D/sweep.log" | tail -5 >> "$LOG"
  export_candidates "$KERNTUNE_HOME" "$D/candidates.csv"
  return $code
}
step_train() {
  bounded 120 python3 -m kerntune train last --table "$D/trained.json" --holdout-every 3 --json > "$D/train.json" 2>> "$LOG"
}
