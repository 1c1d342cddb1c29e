"""The stages of the loop, in order: spec → search → evaluate (compile, gate, measure) → tune → report."""
