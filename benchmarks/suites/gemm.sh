# about: the tuned Triton GEMM against cuBLAS (torch.matmul) and the Triton tutorial's triton.autotune, bf16, on LLM shapes
# steps: tune compare decode
# needs: gpu
# tune:    one `kerntune tune examples/triton_matmul` run over SHAPES ("M,N,K;..."; default the 10 LLM shapes of
#          benchmarks/search_vs_anchors.py), default strategy, BUDGET per shape (20s/shape), no confirmation;
#          every candidate kept as CSV. PRIOR= a tune.json of winners for shapes this run does not reach.
# compare: in one process, kerntune's winners, torch.matmul and the tutorial's 16-config autotune gated against
#          fp64 and timed by kerntune's `measure` (default protocol, eager, cold) in ROUNDS (2) rounds of rotating
#          order; per-shape ratios and geometric means. Reads the tune step's tune.json, or the winners of the
#          store's last run when the tune was cut before writing it.
# decode:  benchmarks/decode_gemm.py on the M = 16 GEMMs of examples/hf_llama's decode step (nn.Linear layout NT):
#          cuBLAS, a sweep of the example kernel's decode configs and a read-only kernel over the same weight
#          bytes (the ceiling), cold L2, CUDA events in rotating order and the best checked by CUPTI durations.
#          DECODE_SHAPES "M,N,K;..." (default the five of the model).
GEMM=$D/ten-shapes
step_tune() {
  mkdir -p "$GEMM"
  [ -n "${PRIOR:-}" ] && cp "$PRIOR" "$GEMM/tune.json"
  KERNTUNE_CONFIRM_ROUNDS=0 bounded "${TUNE_LIMIT:-425}" python3 benchmarks/search_vs_anchors.py --out "$GEMM" --tune \
    --shapes "${SHAPES:-}" --budget "${BUDGET:-20s/shape}" --tag report > "$GEMM/tune.log" 2>&1
  local code=$?
  grep -v '^\[' "$GEMM/tune.log" | tail -14 >> "$LOG"
  export_candidates "$GEMM/store" "$GEMM/tune-candidates.csv"
  return $code
}
step_compare() {
  mkdir -p "$GEMM"
  bounded "${COMPARE_LIMIT:-170}" python3 benchmarks/search_vs_anchors.py --out "$GEMM" --compare --shapes "${SHAPES:-}" \
    --rounds "${ROUNDS:-2}" --tag "${TAG:-report}" > "$GEMM/compare-${TAG:-report}.log" 2>&1
  local code=$?
  tail -8 "$GEMM/compare-${TAG:-report}.log" >> "$LOG"
  return $code
}
step_decode() {
  local out; out=$(step_dir decode)
  bounded "${DECODE_LIMIT:-300}" python3 benchmarks/decode_gemm.py --out "$out" --shapes "${DECODE_SHAPES:-}" \
    > "$out/decode.log" 2>&1
  local code=$?
  grep -v '^  ' "$out/decode.log" | tail -8 >> "$LOG"
  return $code
}
