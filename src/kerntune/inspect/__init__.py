"""Inspect: why a candidate is fast or slow — its launches cross-compiled for any target and read back through
``kerntune.isa`` (resources, occupancy, instruction mix), the difference of two configs, and profiler counters
of a run's finalists. Imports ``report``, ``tune`` and the layers below."""
