# about: a time budget bounds the whole run, confirmation included: wall time by phase against the bound, and what confirmation had to cut
# steps: bounded
# needs: any
# Three GEMM shapes of examples/opencl_matmul (on a GPU: examples/triton_matmul at M=16,N=K=4096, M=N=K=4096 and
# M=4096,N=14336,K=4096), each at BUDGETS (default "5s/shape 10s/shape"), default protocol, 3 confirmation rounds,
# a fresh store per budget: each report (its run's phases and stop reason) and its JSON-lines progress are kept.
step_bounded() {
  local out spec shapes b tag code=0; out=$(step_dir bounded)
  if [ -n "$GPU" ]; then
    spec=examples/triton_matmul; shapes="--shape M=16,N=4096,K=4096 --shape M=4096,N=4096,K=4096 --shape M=4096,N=14336,K=4096"
  else
    spec=examples/opencl_matmul; shapes="--shape M=64,N=64,K=64 --shape M=128,N=128,K=128 --shape M=256,N=256,K=256"
  fi
  for b in ${BUDGETS:-5s/shape 10s/shape}; do
    tag=$(basename "$spec")-$(echo "$b" | tr '/' '-')
    KERNTUNE_HOME="$W/store-$tag" bounded 600 python3 -m kerntune tune "$spec" $shapes --budget "$b" --json \
      > "$out/$tag.json" 2> "$out/$tag.err" || code=1
    grep '^{"event"' "$out/$tag.err" > "$out/$tag.progress.jsonl"
    rm -rf "$W/store-$tag"
  done
  return $code
}
