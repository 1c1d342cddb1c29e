"""Calibration probes, one module per device family: ``opencl`` and ``gpu`` (CUDA and ROCm through torch and
Triton)."""
