"""Report: a run read back from the store — winners, baselines and finalists per shape (``summary``), the
self-contained HTML page with its charts, and the roofline plot. Imports ``measure`` (speed of light) and the
store."""
