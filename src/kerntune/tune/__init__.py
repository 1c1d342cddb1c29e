"""Tune: one run — a spec loaded, its shapes and valid configs, every candidate compiled, gated and measured in
an isolated worker (``evaluate``), each shape searched (``kerntune.search``), finalists confirmed in fresh
processes, the run shared out over a pool of devices. Imports ``search`` and ``measure`` and the layers below."""
