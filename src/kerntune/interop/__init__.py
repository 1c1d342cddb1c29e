"""Interop: Kernel Tuner caches in and out, every sample kept. Imports the store and the nouns."""
