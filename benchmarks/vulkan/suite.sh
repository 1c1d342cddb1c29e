# about: the Vulkan examples tuned end to end on the Vulkan device present (Mesa's lavapipe on a CPU, the GPU's own driver where one is installed): each example's gated winner against its default, both timers, the placement, the driver; the driver's reading of a pipeline; device-local against host-visible buffers side by side; the reduction's bandwidth against the calibrated ceiling
# steps: tune inspect placement bandwidth
# needs: any
# The Vulkan loader, glslang and the bindings must be there first: on a machine without them (the H200), carry
#   Debian's libvulkan1 (.deb), glslangValidator and spirv-val, and the vulkan/cffi/pycparser wheels, and unpack
#   them before the run (benchmarks/vulkan/history.md gives the command used).
# tune:      examples/vulkan_matmul and examples/vulkan_reduction at their spec shapes (MEMORY: device-local by
#            default, or host-visible), each with its own store; the report as JSON and text, and vulkaninfo's
#            summary where it is installed (the driver and its version).
# inspect:   `kerntune inspect examples/vulkan_reduction --target vulkan` at a vectorized config: the driver's
#            statistics and internal representations (VK_KHR_pipeline_executable_properties), or what it does
#            not expose.
# placement: benchmarks/vulkan/vulkan_placement.py: the reduction (N = PLACE_N, default 2^26 on a GPU, 2^20 on a CPU) with
#            its buffers device-local against host-visible, interleaved in one process, gated first.
# bandwidth: the reduction tuned at N = BIG_N (default 2^28 floats, 1 GiB, on a GPU; 2^22 on a CPU), and
#            `kerntune calibrate` of the same machine (on a GPU, the CUDA device's copy and triad): the winner's
#            bytes per second against the calibrated ceiling.
# The Vulkan device this run will use, logged first; where none opens, the backend's own error names each driver
# (ICD) file and why its library did not load. NVIDIA's container toolkit puts the driver its ICD file names
# without a folder (libGLX_nvidia.so.0) in /usr/local/nvidia/lib64, outside the linker's path: added here.
[ -d /usr/local/nvidia/lib64 ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/nvidia/lib64"
note "  Vulkan: $(python3 -c "from kerntune.backends.vulkan import VulkanBackend
b = VulkanBackend(); print(b.props.deviceName, '-', dict(b.target().versions)['driver'])" 2>&1 | tail -1)"
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
step_inspect() {
  local dir; dir=$(step_dir inspect)
  bounded 120 python3 -m kerntune inspect examples/vulkan_reduction --target vulkan --config ITEMS=16,VEC=4 \
    --json > "$dir/inspect.json" 2> "$dir/inspect.err" || return 1
  python3 -m kerntune inspect examples/vulkan_reduction --target vulkan --config ITEMS=16,VEC=4 \
    > "$dir/inspect.txt" 2>&1
  cat "$dir/inspect.txt" >> "$LOG"
}
step_placement() {
  local dir n; dir=$(step_dir placement)
  if [ -n "$GPU" ]; then n=${PLACE_N:-67108864}; else n=${PLACE_N:-1048576}; fi
  bounded "${PLACE_LIMIT:-240}" python3 benchmarks/vulkan/vulkan_placement.py --spec examples/vulkan_reduction \
    --shape "N=$n" --config "${PLACE_CONFIG:-WG=256,ITEMS=16,VEC=4}" --pairs "${PAIRS:-40}" \
    --out "$dir/placement.json" > /dev/null 2> "$dir/placement.err" || return 1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['host_visible_over_device_local']; \
print('  host-visible / device-local', round(r['ratio'], 3), [round(x, 3) for x in r['ci']], d['median_ms'], \
d.get('gb_per_s'))" "$dir/placement.json" >> "$LOG"
}
step_bandwidth() {
  local dir n code=0; dir=$(step_dir bandwidth)
  if [ -n "$GPU" ]; then n=${BIG_N:-268435456}; else n=${BIG_N:-4194304}; fi
  KERNTUNE_HOME="$W/bandwidth" bounded "${CALIBRATE_LIMIT:-200}" python3 -m kerntune calibrate --json \
    > "$dir/calibrate.json" 2> "$dir/calibrate.err" || code=1
  KERNTUNE_HOME="$W/bandwidth" bounded "${BIG_LIMIT:-300}" python3 -m kerntune tune examples/vulkan_reduction \
    --shape "N=$n" --budget "${BIG_BUDGET:-120}" --json > "$dir/reduction.json" 2> "$dir/reduction.err" || code=1
  KERNTUNE_HOME="$W/bandwidth" python3 -m kerntune show last > "$dir/reduction.txt" 2>&1
  head -30 "$dir/reduction.txt" >> "$LOG"
  return $code
}
