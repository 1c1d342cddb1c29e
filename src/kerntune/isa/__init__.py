"""ISA analysis: occupancy arithmetic from compiled resources (pure, no device)."""
