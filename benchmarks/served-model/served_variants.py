"""Where a served program's time goes: the same program in fresh processes under variants of the serving.

    python benchmarks/served-model/served_variants.py --table T.json [--rounds 2] [--out F.json] -- python app.py ARGS

Variants, each a fresh process printing its metric (the last ``NUMBER ms per`` line; lower is better):
- ``plain``: the program alone;
- ``off``: under ``kerntune run --table T`` with ``KERNTUNE_DISPATCH=off`` (what ``kerntune verify``'s A side runs);
- ``native``: under ``kerntune run --table T``, the C++ gate;
- ``python``: the same with ``KERNTUNE_NATIVE_GATE=off``, the Python gate;
- ``misses``: a table of the same entries at an M no call has, so every call goes through the gate and misses;
- ``no-tma``: the table without its TMA entries (``config.TMA`` = 1), where it has any.
Each round runs the variants in order, then reversed, so each variant meets every moment of the round alike.
Per variant: the median metric and its ratio to ``off``'s median. Every served process's own serving stats
(``KERNTUNE_VERIFY_OUT``: the gate, its planned forms, the calls served and missed) are kept too.
``--profile``: then ``off`` and ``native`` once each under the profiler (``kerntune.scope.program``, the whole run):
device time in all, the device-busy fraction, device time by class, and each GEMM shape's device time and count,
so a slower served run shows whether its device or its host time grew.
A process that exits non-zero, or prints no metric, stops the run with its output's last lines.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from kerntune.scope.program import profile_program  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from served_abba import DEFAULT_METRIC as METRIC  # noqa: E402
from served_abba import run_for_metric  # noqa: E402


def _tables(table: Path, folder: Path) -> dict[str, Path]:
    """The variants' tables: the given one, its entries shifted to M + 1 (misses), and without TMA entries."""
    data = json.loads(table.read_text())
    # M moved far past any M the table holds (M + 1 could be another entry's key); entries without M are dropped
    far = 1 + max((e["key"]["M"] for e in data["entries"] if isinstance(e["key"].get("M"), int)), default=0)
    moved = [{**e, "key": {**e["key"], "M": e["key"]["M"] + far}} for e in data["entries"] if "M" in e["key"]]
    shifted = {**data, "entries": moved}
    paths = {"table": table, "misses": folder / "misses.json"}
    paths["misses"].write_text(json.dumps(shifted))
    kept = [e for e in data["entries"] if not e.get("config", {}).get("TMA")]
    if len(kept) < len(data["entries"]):
        paths["no-tma"] = folder / "no-tma.json"
        paths["no-tma"].write_text(json.dumps({**data, "entries": kept}))
    return paths


def _command(variant: str, tables: dict[str, Path], spec_dir: str, program: list[str]) -> tuple[list[str], dict]:
    """The variant's command line and the environment it adds."""
    if variant == "plain":
        return program, {}
    table = tables["misses"] if variant == "misses" else tables["no-tma"] if variant == "no-tma" else tables["table"]
    env = {"off": {"KERNTUNE_DISPATCH": "off"}, "python": {"KERNTUNE_NATIVE_GATE": "off"}}.get(variant, {})
    runner = [sys.executable, "-m", "kerntune", "run", "--table", str(table), "--spec-dir", spec_dir, "--"]
    return runner + program, env


def _run(command: list[str], env: dict[str, str], stats_dir: Path, timeout: float) -> tuple[float, list[Any]]:
    """The process's metric (``served_abba``'s run), and the serving stats it wrote."""
    stats_dir.mkdir(parents=True)
    value = run_for_metric(command, METRIC, timeout, {**env, "KERNTUNE_VERIFY_OUT": str(stats_dir)})
    return value, [json.loads(f.read_text()) for f in sorted(stats_dir.glob("serve-*.json"))]


def _profiled(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One run under the profiler: what its device did, and each GEMM shape's device time and count."""
    found = profile_program(command, env)
    gemms = [{"op": g.op, **g.shape, "calls": g.calls, "device_us": g.device_us} for g in found["gemms"]]
    summary = {
        "device_us": found["device_us"],
        "busy": found["busy"],
        "wall_us": found["window"]["wall_us"],
        "classes": found["classes"],
        "gemms": gemms,
        "kernels": [{k: r[k] for k in ("name", "launches", "device_us")} for r in found["kernels"][:15]],
    }
    print(f"profiled {shlex.join(command[-6:])}: device {found['device_us']:.0f} us, busy {found['busy']}", flush=True)
    return summary


def main() -> None:
    if "--" not in sys.argv:
        raise SystemExit("give the program after --: served_variants.py --table T.json -- python app.py ARGS")
    split = sys.argv.index("--")
    p = argparse.ArgumentParser()
    p.add_argument("--table", required=True, type=Path)
    p.add_argument("--spec-dir", default="kernels")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one process may take")
    p.add_argument("--only", help="a comma-separated subset of the variants (off is always run: the ratios' base)")
    p.add_argument("--profile", action="store_true", help="then off and native once each under the profiler")
    p.add_argument("--out")
    args = p.parse_args(sys.argv[1:split])
    program = sys.argv[split + 1 :]
    folder = Path(tempfile.mkdtemp(prefix="kerntune-variants-"))
    tables = _tables(args.table, folder)
    variants = ["plain", "off", "native", "python", "misses", *(["no-tma"] if "no-tma" in tables else [])]
    if args.only:
        variants = [v for v in variants if v == "off" or v in args.only.split(",")]
    values: dict[str, list[float]] = {v: [] for v in variants}
    stats: dict[str, list[Any]] = {v: [] for v in variants}
    seq = 0
    for _ in range(args.rounds):
        for variant in [*variants, *reversed(variants)]:
            command, env = _command(variant, tables, args.spec_dir, program)
            value, served = _run(command, env, folder / f"stats-{seq}", args.timeout)
            seq += 1
            values[variant].append(value)
            stats[variant].extend(served)
            print(f"{variant:>8}: {value:.4f}", flush=True)
    medians = {v: statistics.median(x) for v, x in values.items()}
    result = {
        "program": shlex.join(program),
        "table": str(args.table),
        "rounds": args.rounds,
        "values": values,
        "median": medians,
        "over_off": {v: medians[v] / medians["off"] for v in variants},
        "serve_stats": stats,
    }
    if args.out:  # the timed values are kept even if the profiled runs below fail or are cut
        Path(args.out).write_text(json.dumps(result, indent=1))
    if args.profile:
        result["profile"] = {v: _profiled(*_command(v, tables, args.spec_dir, program)) for v in ("off", "native")}
    for v in variants:
        spread = f"{min(values[v]):.4f}-{max(values[v]):.4f}"
        print(f"{v:>8}: median {medians[v]:.4f} ({spread}), {result['over_off'][v]:.4f} x off")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
