# about: the shipped GPU specs tuned end to end at their spec shapes: the product GEMM (kernels/triton_gemm) at 4096³ bf16 (torch.matmul in the same run) and kernels/triton_rmsnorm
# steps: matmul rmsnorm
# needs: gpu
# tune_example FOLDER LIMIT: `kerntune tune FOLDER --json` with its own store, its report kept as text too (named
# after the folder's last part).
tune_example() {
  local spec=$1 limit=$2 name; name=$(basename "$1")
  KERNTUNE_HOME="$W/$name" bounded "$limit" python3 -m kerntune tune "$spec" --json > "$D/$name.json" 2> "$D/$name.err"
  local code=$?
  KERNTUNE_HOME="$W/$name" python3 -m kerntune show last > "$D/$name.txt" 2>&1
  head -40 "$D/$name.txt" >> "$LOG"
  return $code
}
step_matmul() { tune_example kernels/triton_gemm "${MATMUL_LIMIT:-300}"; }
step_rmsnorm() { tune_example kernels/triton_rmsnorm "${RMSNORM_LIMIT:-90}"; }
