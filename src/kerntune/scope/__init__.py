"""Scope: what a program runs — its kernels by device-time share and implementation class, and the GEMM shapes
of its aten calls as a corpus. Imports only ``errors`` and the standard library."""
