"""Compare: ``kerntune ab`` — the sides of a claim, the runners that time them (fresh processes ABBA, one process
interleaved, a command), and the verdict against a noise band. Imports ``tune`` (spec loading, worker entry
points), ``measure`` (statistics) and the layers below."""
