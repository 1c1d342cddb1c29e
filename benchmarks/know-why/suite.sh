# about: the device's ceilings and kerntune's reading of a kernel, checked against the GPU: calibration, inspect's resources, occupancy against Nsight Compute
# steps: calibrate checks
# needs: any
# calibrate: `kerntune calibrate --json` (copy and triad bandwidth, FMA and matrix rates per dtype, launch latency;
#            PoCL on a CPU machine).
# checks:    (GPU) tests/gpu/inspect/test_know_why_gpu.py -rA: calibrated copy and bf16 rate against a plain
#            device-to-device copy and torch.matmul in the same process; inspect's cross-compiled registers and
#            shared memory against the kernel Triton launched; occupancy against ncu's theoretical occupancy.
step_calibrate() {
  bounded "${CALIBRATE_LIMIT:-180}" python3 -m kerntune calibrate --json > "$D/calibrate.json" 2>> "$LOG"
}
step_checks() {
  [ -n "$GPU" ] || { note "  the checks read a GPU: skipped"; return 0; }
  bounded "${CHECKS_LIMIT:-300}" python3 -m pytest tests/gpu/inspect/test_know_why_gpu.py -v -rA -s -p no:cacheprovider \
    > "$D/checks.log" 2>&1
}
