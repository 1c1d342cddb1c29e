"""Merge tables that `kerntune deploy` wrote, one run's each, into one table by deploy's own merge: what
`kerntune deploy RUN --table TABLE` does with an existing TABLE (``kerntune.deploy.artifacts.merged``: one device
and agreeing versions required, a later entry of the same key replaces the earlier, the specs ranked again per call,
so each call is served by the spec fastest beside the library), then its three artifacts written
(``write_artifacts``: TABLE and its .py and .inc).

    python benchmarks/gemm-payoff/merge_tables.py TABLE.json RUN_TABLE.json [RUN_TABLE.json ...]

The suite's deploy step deploys every run it finds in its store straight into one table; this takes the runs
tuned on another machine (a device machine's store does not outlive it), from the per-run tables the tune step
kept. Exit 2 with one line where a table cannot be read or merged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def merge_into(target: Path, sources: list[Path]) -> int:
    """Merge each source table into ``target`` in turn; the number of entries the result holds."""
    from kerntune.deploy.artifacts import check_table_path, merged, write_artifacts

    check_table_path(target)
    table: dict[str, object] = {}
    for source in sources:
        table = merged(target, json.loads(source.read_text()))
        write_artifacts(target, table)
    entries = table.get("entries", [])
    return len(entries) if isinstance(entries, list) else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print("merge_tables.py: give TABLE.json and one or more RUN_TABLE.json", file=sys.stderr)
        return 2
    from kerntune.errors import KerntuneError

    target, sources = Path(args[0]), [Path(a) for a in args[1:]]
    try:
        count = merge_into(target, sources)
    except (OSError, ValueError, KeyError, KerntuneError) as exc:  # deploy's UsageError names what is wrong
        print(f"merge_tables.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(f"{target}: {count} entries from {len(sources)} run tables merged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
