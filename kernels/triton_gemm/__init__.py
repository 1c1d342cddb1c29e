"""The product GEMM's modules. ``spec.py`` is the spec kerntune loads; it imports the others as this package."""
