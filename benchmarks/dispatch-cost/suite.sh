# about: host cost of a dispatched call: Dispatcher.select against a dict lookup, and on a GPU a direct Triton launch against Dispatcher.kernel and triton.autotune, interleaved
# steps: dispatch
# needs: any
# benchmarks/dispatch-cost/dispatch_cost.py (--gpu where a GPU is visible): 9 rounds, each timing every path for 2,000 calls in a
# rotated order; the overheads are medians of the per-round differences against the direct launch.
step_dispatch() {
  local out flag=(); out=$(step_dir dispatch)
  [ -n "$GPU" ] && flag=(--gpu)
  bounded "${DISPATCH_LIMIT:-90}" python3 benchmarks/dispatch-cost/dispatch_cost.py "${flag[@]}" > "$out/dispatch_cost.json" 2>> "$LOG"
}
