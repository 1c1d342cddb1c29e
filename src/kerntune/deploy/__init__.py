"""Deploy: make the live path use a result — dispatch tables and their generated Python/C, admissions, tables
trained into rules, migration to another device, per-arch speed floors, and the proof that the live program
ran the tuned kernel. Imports ``compare``, ``report``, ``scope`` and the layers below."""
