"""Library operators a tuned kernel stands in for: their inputs, reference, library baseline and cost, shared by
every spec that tunes or serves that operator (one key means one call shape across specs)."""
