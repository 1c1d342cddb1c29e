# about: the shipped GPU examples tuned end to end at their spec shapes: triton_matmul at 4096³ bf16 (torch.matmul in the same run) and triton_rmsnorm
# steps: matmul rmsnorm
# needs: gpu
# tune_example NAME LIMIT: `kerntune tune examples/NAME --json` with its own store, its report kept as text too.
tune_example() {
  local name=$1 limit=$2
  KERNTUNE_HOME="$W/$name" bounded "$limit" python3 -m kerntune tune "examples/$name" --json > "$D/$name.json" 2> "$D/$name.err"
  local code=$?
  KERNTUNE_HOME="$W/$name" python3 -m kerntune show last > "$D/$name.txt" 2>&1
  head -40 "$D/$name.txt" >> "$LOG"
  return $code
}
step_matmul() { tune_example triton_matmul "${MATMUL_LIMIT:-300}"; }
step_rmsnorm() { tune_example triton_rmsnorm "${RMSNORM_LIMIT:-90}"; }
