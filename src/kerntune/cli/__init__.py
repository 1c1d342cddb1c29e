"""The ``kerntune`` command line (typer + rich), thin over the pipeline."""
