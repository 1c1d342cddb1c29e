# about: the tuned Triton GEMM against cuBLAS (torch.matmul) and the Triton tutorial's triton.autotune, bf16, on LLM shapes
# steps: tune compare decode forms
# needs: gpu
# tune:    one `kerntune tune kernels/triton_gemm` run over SHAPES ("M,N,K;..."; default the 10 LLM shapes of
#          benchmarks/gemm/search_vs_anchors.py), default strategy, BUDGET per shape (20s/shape), no confirmation;
#          every candidate kept as CSV. PRIOR= a tune.json of winners for shapes this run does not reach.
# compare: in one process, kerntune's winners, torch.matmul and the tutorial's 16-config autotune gated against
#          fp64 and timed by kerntune's `measure` (default protocol, eager, cold) in ROUNDS (2) rounds of rotating
#          order; per-shape ratios and geometric means. Reads the tune step's tune.json, or the winners of the
#          store's last run when the tune was cut before writing it.
# decode:  benchmarks/gemm/decode_gemm.py on the M = 16 GEMMs of examples/hf_llama's decode step (nn.Linear layout NT):
#          cuBLAS, a sweep of the example kernel's decode configs and a read-only kernel over the same weight
#          bytes (the ceiling), cold L2, CUDA events in rotating order and the best checked by CUPTI durations.
#          DECODE_SHAPES "M,N,K;..." (default the five of the model).
# forms:   benchmarks/gemm/gemm_forms.py: per shape of FORM_SHAPES (default benchmarks/specs/llm_gemm_shapes.txt), the
#          example's seed configs of each form in FORMS (default split_k,tma) valid there and the winner of
#          FORM_REPORT (default the time-budget suite's 12 s/shape run of 2026-12-04, 20:09 UTC), each against
#          torch.matmul by the claims check's protocol (CUPTI kernel durations, torch/config/config/torch blocks, a
#          256 MiB fill before every call, 4 operand placements). Not a search: what each form's known-good configs
#          do. FORM_SPECS "LABEL=SPEC.py ...": other versions of the spec file whose kernels run the same configs.
#          FORM_FLUSH=clean: the fill, then a read of another 256 MiB, before every call (the L2 holds clean lines,
#          not the fill's dirty ones; default write, the fill alone).
GEMM=$D/ten-shapes
step_tune() {
  mkdir -p "$GEMM"
  [ -n "${PRIOR:-}" ] && cp "$PRIOR" "$GEMM/tune.json"
  KERNTUNE_CONFIRM_ROUNDS=0 bounded "${TUNE_LIMIT:-425}" python3 benchmarks/gemm/search_vs_anchors.py --out "$GEMM" --tune \
    --shapes "${SHAPES:-}" --budget "${BUDGET:-20s/shape}" --tag report > "$GEMM/tune.log" 2>&1
  local code=$?
  grep -v '^\[' "$GEMM/tune.log" | tail -14 >> "$LOG"
  export_candidates "$GEMM/store" "$GEMM/tune-candidates.csv"
  return $code
}
step_compare() {
  mkdir -p "$GEMM"
  bounded "${COMPARE_LIMIT:-170}" python3 benchmarks/gemm/search_vs_anchors.py --out "$GEMM" --compare --shapes "${SHAPES:-}" \
    --rounds "${ROUNDS:-2}" --tag "${TAG:-report}" > "$GEMM/compare-${TAG:-report}.log" 2>&1
  local code=$?
  tail -8 "$GEMM/compare-${TAG:-report}.log" >> "$LOG"
  return $code
}
step_decode() {
  local out; out=$(step_dir decode)
  bounded "${DECODE_LIMIT:-300}" python3 benchmarks/gemm/decode_gemm.py --out "$out" --shapes "${DECODE_SHAPES:-}" \
    > "$out/decode.log" 2>&1
  local code=$?
  grep -v '^  ' "$out/decode.log" | tail -8 >> "$LOG"
  return $code
}
step_forms() {
  local out spec specs=() report; out=$(step_dir forms)
  report=$(data_file "${FORM_REPORT:-benchmarks/data/time-budget/2026-12-04/bounded-12s-gemv-warm-carry/triton_matmul-12s-shape.json}") || return 1
  for spec in ${FORM_SPECS:-}; do specs+=(--spec "$spec"); done
  bounded "${FORMS_LIMIT:-480}" python3 benchmarks/gemm/gemm_forms.py "$out/gemm_forms.json" \
    --shapes "${FORM_SHAPES:-benchmarks/specs/llm_gemm_shapes.txt}" --forms "${FORMS:-split_k,tma}" \
    --report "$report" \
    "${specs[@]}" --flush "${FORM_FLUSH:-write}" --limit-s $(( ${FORMS_LIMIT:-480} - 60 )) > "$out/forms.log" 2>&1
  local code=$?
  tail -23 "$out/forms.log" >> "$LOG"
  return $code
}
