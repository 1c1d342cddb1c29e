# about: a time budget bounds the whole run, confirmation included: wall time by phase against the bound, and what confirmation had to cut
# steps: bounded
# needs: any
# On a GPU: examples/triton_matmul at the shapes of SHAPES_FILE (default benchmarks/specs/llm_gemm_shapes.txt, 20
# LLM shapes), bf16, each budget of BUDGETS (default "12s/shape"); on a CPU: three GEMM shapes of
# examples/opencl_matmul at BUDGETS (default "5s/shape 10s/shape"). Default protocol, 3 confirmation rounds, a
# fresh store per budget: each report (its run's phases and stop reason) and its JSON-lines progress are kept,
# with the command's own wall time in the log.
step_bounded() {
  local out spec shapes b tag code=0; out=$(step_dir bounded)
  if [ -n "$GPU" ]; then
    spec=examples/triton_matmul; BUDGETS=${BUDGETS:-12s/shape}
    shapes="--dtype bfloat16 $(grep -v '^#' "${SHAPES_FILE:-benchmarks/specs/llm_gemm_shapes.txt}" | grep . | sed 's/^/--shape /' | tr '\n' ' ')"
  else
    spec=examples/opencl_matmul; shapes="--shape M=64,N=64,K=64 --shape M=128,N=128,K=128 --shape M=256,N=256,K=256"
  fi
  for b in ${BUDGETS:-5s/shape 10s/shape}; do
    tag=$(basename "$spec")-$(echo "$b" | tr '/' '-')
    KERNTUNE_HOME="$W/store-$tag" bounded 600 python3 -m kerntune tune "$spec" $shapes --budget "$b" --json \
      > "$out/$tag.json" 2> "$out/$tag.err" || code=1
    grep '^{"event"' "$out/$tag.err" > "$out/$tag.progress.jsonl"
    export_candidates "$W/store-$tag" "$out/$tag-candidates.csv"
    rm -rf "$W/store-$tag"
  done
  return $code
}
