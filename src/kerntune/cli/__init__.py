"""The ``kerntune`` command line (typer + rich), thin over the loop's packages."""
