"""Workers: candidates compile and run in subprocesses, one per device, so that a crash or a hang costs
one candidate, never the tuner, its store or other results."""
