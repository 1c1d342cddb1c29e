# about: the Vulkan examples tuned end to end on the Vulkan device present (Mesa's lavapipe on a CPU, the GPU's own driver where one is installed): each example's gated winner against its default, both timers, the placement, the driver
# steps: tune
# needs: any
# tune: examples/vulkan_matmul and examples/vulkan_reduction at their spec shapes (MEMORY: device-local by default,
#       or host-visible), each with its own store; the report as JSON and text, and vulkaninfo's summary where it
#       is installed (the driver and its version).
step_tune() {
  local name code=0
  command -v vulkaninfo >/dev/null && vulkaninfo --summary > "$D/vulkaninfo.txt" 2>&1
  for name in vulkan_matmul vulkan_reduction; do
    KERNTUNE_HOME="$W/$name" KERNTUNE_VULKAN_MEMORY=${MEMORY:-device-local} bounded "${LIMIT:-600}" \
      python3 -m kerntune tune "examples/$name" --json > "$D/$name.json" 2> "$D/$name.err" || code=1
    KERNTUNE_HOME="$W/$name" python3 -m kerntune show last > "$D/$name.txt" 2>&1
    head -40 "$D/$name.txt" >> "$LOG"
  done
  return $code
}
