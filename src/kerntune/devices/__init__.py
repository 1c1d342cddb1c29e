"""Per-vendor device facts: telemetry (NVML), and later calibration and arch tables."""
