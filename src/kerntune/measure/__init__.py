"""Measure: how long a launch takes, honestly — the sampling protocol over a backend's timer, its statistics,
device calibration and its probes, and the speed of light of a time against the calibrated ceilings. Imports
the layers below the loop (backends, devices, exec, store, model)."""
