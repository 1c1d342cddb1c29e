# about: the live path engaged: the transformer MLP demo's matmuls and RMSNorm tuned, deployed into one table, verified by kernel identity and hit counts, end-to-end A/B; a table keyed to another SM count misses
# steps: engagement
# needs: gpu
# The figures come from the gpu test that runs the loop (tests/gpu/runtime/test_live_gpu.py, -s prints them):
# `kerntune verify --processes 3 -- python3 examples/transformer_mlp/run.py --steps 200 --table T`.
step_engagement() {
  bounded "${LIVE_LIMIT:-330}" python3 -m pytest tests/gpu/runtime/test_live_gpu.py -q -rA -s -p no:cacheprovider \
    > "$D/live-test.log" 2>&1
}
