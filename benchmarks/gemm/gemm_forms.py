"""Does a kernel form of `kernels/triton_gemm` move the ratio to cuBLAS where the tuned winner loses, and do two
runs' winners differ? Per GEMM shape, the spec's seed configs of each form asked for (main's example has the plain,
TMA, split-K and GEMV forms; SK_TAIL and a first, non-TMA stream-K timed on 2026-12-04 live on branch gemm-levers,
a stream-K on the persistent TMA kernel on branch stream-k-tma) that
are valid there, and the winner each `kerntune tune --json` report given chose for the shape, each timed against
torch.matmul (cuBLAS) by the independent check's protocol (benchmarks/measurement-trust/claims_check.py): gated against
float64, then blocks of torch, config, config, torch, a 256 MiB fill before every call, the profiler's kernel durations
(CUPTI through torch.profiler) summed per call, the median block ratio with a bootstrap 95% interval, the blocks
taking PLACEMENTS operand sets in turn. No search and no kerntune timer: a fixed set of configs, so two trees (or
two forms) compare on the same configs, and a form's best seed says what the form can do before a search spends
a budget on it.

Usage: python benchmarks/gemm/gemm_forms.py OUT.json [--shapes FILE] [--report [LABEL=]TUNE.json ...]
       [--forms stream_k,...] [--spec LABEL=SPEC.py ...] [--blocks 30] [--placements 4] [--limit-s S]
       [--best-report BEST.json]
Reports given the same label are the parts of one run, split by shapes (they must not share a shape). A --spec is
the spec.py of another version of the product GEMM's folder, copied whole (``git archive BRANCH kernels/triton_gemm
| tar -x -C DIR``, then DIR/kernels/triton_gemm/spec.py; an older single-file spec works alone): the reports' winners
and its seeds of the forms asked for are launched through its kernels too, labelled LABEL:prior, LABEL:gemv, ..., in
the same run, so two versions of a kernel meet on the same configs, inputs and torch.matmul. Prints one line per shape
(torch.matmul's µs, the report winner's ratio, each form's best seed and its ratio; a ratio is the config's time over
torch.matmul's, lower is faster) and a summary; OUT.json holds every timing (``call_us`` raw, in call order). Exit 1 if
a config failed its gate or did not compile or run (each shape's line names those as DID NOT RUN, the other configs
still timed), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "measurement-trust"))  # claims_check, flush_read

FORMS = ("plain", "tma", "split_k", "tma_split_k", "wide", "tma_wide", "sk_tail", "stream_k", "gemv")


def form_of(config: dict[str, Any]) -> str:
    """The kernel form a config runs: the one its form switches name, else split-K, a wide tile (BLOCK_N not a power
    of two), TMA or the plain kernel."""
    for key, form in (("STREAM_K", "stream_k"), ("SK_TAIL", "sk_tail"), ("GEMV", "gemv")):
        if config.get(key):
            return form
    tma = "tma_" if config.get("TMA") else ""
    if config.get("SPLIT_K", 1) > 1:
        return tma + "split_k"
    block_n = int(config.get("BLOCK_N", 1))
    if block_n & (block_n - 1):
        return tma + "wide"
    return tma.rstrip("_") or "plain"


def parse_shape(line: str) -> dict[str, Any]:
    """``M=..,N=..,K=..[,layout=NT][,bias=1]`` as a shape dict (layout NN and no bias unless given), read by the
    CLI's own ``--shape`` parser; a ValueError names what is wrong."""
    from kerntune.cli.common import parse_shape as shape_fields
    from kerntune.errors import UsageError

    try:
        fields = shape_fields(line)
    except UsageError as exc:
        raise ValueError(str(exc)) from exc
    if not {"M", "N", "K"} <= fields.keys():
        raise ValueError(f"{line!r}: M, N and K are needed")
    shape: dict[str, Any] = {"layout": "NN", "bias": 0}
    for key, value in fields.items():
        if key != "layout" and not value.isdigit():
            raise ValueError(f"{line!r}: {key} is {value!r}, not a whole number")
        shape[key] = value if key == "layout" else int(value)
    return shape


def read_shapes(path: Path) -> list[dict[str, Any]]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [parse_shape(line) for line in lines if line]


def labelled_report(text: str, index: int) -> tuple[str, Path]:
    """``LABEL=PATH`` or ``PATH`` (labelled ``prior``, ``prior-2``, ... by its place among the reports)."""
    label, sep, path = text.partition("=")
    if sep and label and "/" not in label:
        return label, Path(path)
    return ("prior" if index == 0 else f"prior-{index + 1}"), Path(text)


def report_winners(path: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each shape's winning config in a `kerntune tune --json` report, keyed by (M, N, K, layout, bias)."""
    found = {}
    for row in json.loads(path.read_text()).get("shapes", []):
        config = (row.get("winner") or {}).get("config")
        if config:
            found[key_of(row["shape"])] = {k: int(v) for k, v in config.items()}
    return found


def merged_winners(reports: list[tuple[str, Path]]) -> list[tuple[str, dict[tuple[Any, ...], dict[str, Any]]]]:
    """Each label's winners by shape, in the labels' first order. Reports that share a label are one run done in
    parts (a long run split by shapes across calls: the time-budget suite's ``unbounded`` step); a shape two of
    them tuned is refused, since which winner stands for the run would be a guess."""
    merged: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    for label, path in reports:
        part, found = report_winners(path), merged.setdefault(label, {})
        twice = sorted(set(part) & set(found))
        if twice:
            raise ValueError(
                f"two reports labelled {label!r} both tuned {'x'.join(map(str, twice[0][:3]))} "
                f"{twice[0][3]}: the parts of one run must not share a shape"
            )
        found.update(part)
    return list(merged.items())


def key_of(shape: dict[str, Any]) -> tuple[Any, ...]:
    return (
        int(shape["M"]),
        int(shape["N"]),
        int(shape["K"]),
        str(shape.get("layout", "NN")),
        int(shape.get("bias", 0)),
    )


def candidates(
    problem: Any, shape: dict[str, Any], target: Any, forms: set[str], priors: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, dict[str, Any]]]:
    """(label, config) to time: each report's winner under its label (``prior`` for the first report; completed
    from the spec's default; two reports that chose the same config time it twice, an A/A of the protocol), then
    every seed of a form asked for that the spec's constraints allow at this shape and target, each config once."""
    from kerntune.model import Config, Shape

    space, picked, seen = problem.space, [], set()
    default = space.default_config().as_dict()
    for label, prior in priors:
        config = {**default, **prior}
        picked.append((label, config))
        seen.add(tuple(sorted(config.items())))
    for seed in space.seed_configs():
        config = seed.as_dict()
        if form_of(config) not in forms or tuple(sorted(config.items())) in seen:
            continue
        if space.check(Config.of(config), Shape.of(shape), target) is None:
            picked.append((form_of(config), config))
            seen.add(tuple(sorted(config.items())))
    return picked


def variant_candidates(
    variants: list[tuple[str, Any]],
    shape: dict[str, Any],
    target: Any,
    forms: set[str],
    priors: list[tuple[str, dict[str, Any]]],
) -> list[tuple[str, dict[str, Any], Any]]:
    """(label, config, problem) for each other version of the spec: the reports' winners and its own seeds of the
    forms asked for (``candidates``) that its constraints allow here, labelled ``VERSION:label``."""
    from kerntune.model import Config, Shape

    return [
        (f"{name}:{label}", config, problem)
        for name, problem in variants
        for label, config in candidates(problem, shape, target, forms, priors)
        if label in forms or problem.space.check(Config.of(config), Shape.of(shape), target) is None
    ]


def load_variants(texts: list[str]) -> list[tuple[str, Any]]:
    """``LABEL=SPEC.py`` as (label, its problem); a ValueError names a bad one."""
    from kerntune.errors import KerntuneError
    from kerntune.tune.spec import load_spec

    variants = []
    for text in texts:
        label, sep, path = text.partition("=")
        if not sep or not label or "/" in label or ":" in label:
            raise ValueError(f"{text!r} is not LABEL=SPEC.py")
        if not Path(path).is_file():
            raise ValueError(f"{path} is not a file")
        try:
            variants.append((label, load_spec(path).problem))
        except KerntuneError as exc:
            raise ValueError(f"{path}: {exc}") from None
    return variants


def time_shape(
    problem: Any,
    shape: dict[str, Any],
    picked: list[tuple[str, dict[str, Any], Any]],
    blocks: int,
    placements: int,
    flush: Any,
    clean: Any = None,
) -> dict[str, Any]:
    """Gate and time every picked config, launched through the problem picked with it, against torch.matmul at
    ``shape`` (claims_check's protocol; every config meets the same operands, made by ``problem``; ``clean``: the
    read its clean flush launches after each fill, or None)."""
    import torch
    from claims_check import GATE, gate_errors, matmul_calls, placed_operands, timed_blocks, warm_up

    pads: list[torch.Tensor] = []
    sets = placed_operands(problem, shape, placements, pads)
    rows = []
    for label, config, launcher in picked:
        row: dict[str, Any] = {"label": label, "form": form_of(config), "config": config}
        try:  # a config the installed compiler rejects is reported, and the other configs still run
            calls = matmul_calls(launcher, sets[0], shape, config)
            errors = gate_errors(problem, sets[0], shape, calls)
        except Exception as exc:  # Triton raises RuntimeError, CompilationError, OutOfResources...
            last = (str(exc).strip().splitlines() or [""])[-1]
            rows.append({**row, "gated": False, "failed": f"{type(exc).__name__}: {last}"})
            continue
        row["errors"] = errors
        if max(errors.values()) > GATE:
            rows.append({**row, "gated": False})
            continue
        placed = [matmul_calls(launcher, each, shape, config) for each in sets]
        warm_up([c for each in placed for c in each.values()])
        row["checked"] = timed_blocks(
            [c["torch"] for c in placed], [c["winner"] for c in placed], flush, blocks, clean=clean
        )
        rows.append({**row, "gated": True})
    return {"shape": shape, "rows": rows}


def best_by_form(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each label's fastest gated config (``prior`` is the report's winner, the others forms)."""
    best: dict[str, dict[str, Any]] = {}
    for row in found["rows"]:
        if row["gated"] and (
            row["label"] not in best or row["checked"]["ratio"] < best[row["label"]]["checked"]["ratio"]
        ):
            best[row["label"]] = row
    return best


def best_report(done: list[dict[str, Any]]) -> dict[str, Any]:
    """Each shape's fastest gated config of any label, as a `kerntune tune --json` report's ``shapes`` (what
    benchmarks/time-budget/against_max_autotune.py reads), so a form's best seed can meet max-autotune side by side."""
    shapes = []
    for found in done:
        best = best_by_form(found)
        if best:
            top = min(best.values(), key=lambda row: row["checked"]["ratio"])
            shapes.append({"shape": found["shape"], "winner": {"config": top["config"], "label": top["label"]}})
    return {"shapes": shapes}


def summary(done: list[dict[str, Any]]) -> dict[str, Any]:
    """Per label, the geomean of its best ratio over the shapes where it ran; and the geomean of the best of all
    (the report's winner or any form) against the report's winner alone, over the shapes that have both."""
    per_label: dict[str, list[float]] = {}
    gains = []
    for found in done:
        best = best_by_form(found)
        for label, row in best.items():
            per_label.setdefault(label, []).append(row["checked"]["ratio"])
        if "prior" in best:
            top = min(row["checked"]["ratio"] for row in best.values())
            gains.append(best["prior"]["checked"]["ratio"] / top)

    def geomean(values: list[float]) -> float:
        return math.exp(sum(math.log(v) for v in values) / len(values))

    return {
        "shapes": len(done),
        "geomean_ratio_by_label": {k: geomean(v) for k, v in per_label.items()},
        "shapes_by_label": {k: len(v) for k, v in per_label.items()},
        "prior_over_best_geomean": geomean(gains) if gains else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--shapes", type=Path, default=ROOT / "benchmarks" / "specs" / "llm_gemm_shapes.txt")
    parser.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="[LABEL=]PATH",
        help="a kerntune tune --json report: its winners are timed too, labelled LABEL (the first "
        "report's default 'prior', the next 'prior-2', ...); repeat to time several side by side; "
        "reports with one label are one run's parts",
    )
    parser.add_argument(
        "--forms",
        default="split_k,tma",
        help=f"comma-separated, of {', '.join(FORMS)}; empty to time the reports' winners alone",
    )
    parser.add_argument(
        "--spec",
        action="append",
        default=[],
        metavar="LABEL=SPEC.py",
        help="another version of the example's spec: the same configs launched through its kernels",
    )
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--placements", type=int, default=4)
    parser.add_argument("--limit-s", type=float, default=0.0, help="stop before a shape once this much has passed")
    parser.add_argument(
        "--flush",
        choices=("write", "clean"),
        default="write",
        help="write: the check's fill before every call (the L2 left dirty); clean: the fill, then a "
        "read of another buffer, so each call meets clean lines",
    )
    parser.add_argument(
        "--best-report",
        type=Path,
        help="also write each shape's fastest config of any label as a "
        "tune report (for benchmarks/time-budget/against_max_autotune.py)",
    )
    opts = parser.parse_args()
    forms = {f.strip() for f in opts.forms.split(",") if f.strip()}
    problems = [f"--forms: unknown form {f!r} (one of {', '.join(FORMS)})" for f in sorted(forms - set(FORMS))]
    reports = [labelled_report(text, n) for n, text in enumerate(opts.report)]
    problems += [
        f"--{name}: {path} is not a file"
        for name, path in (("shapes", opts.shapes), *(("report", path) for _, path in reports))
        if not path.is_file()
    ]
    winners: list[tuple[str, dict[tuple[Any, ...], dict[str, Any]]]] = []
    if not any(p.startswith("--report") for p in problems):
        try:
            winners = merged_winners(reports)
        except (ValueError, KeyError, json.JSONDecodeError) as exc:
            problems.append(f"--report: {exc}")
    variants: list[tuple[str, Any]] = []
    try:
        variants = load_variants(opts.spec)
    except ValueError as exc:
        problems.append(f"--spec: {exc}")
    if opts.blocks < 2 or opts.placements < 1:
        problems.append("--blocks must be at least 2 and --placements at least 1")
    try:
        shapes = read_shapes(opts.shapes) if opts.shapes.is_file() else []
    except ValueError as exc:
        problems.append(f"--shapes: {exc}")
    if problems:
        print("gemm_forms: " + "; ".join(problems), file=sys.stderr)
        return 2

    import torch
    from claims_check import FLUSH_BYTES, _problem

    from kerntune.model import Target

    if not torch.cuda.is_available():
        print("gemm_forms: no CUDA device: this benchmark times kernels on a GPU", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(0)
    target = Target("triton", "nvidia", f"sm_{props.major}{props.minor}", props.name, props.multi_processor_count)
    problem = _problem()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    from flush_read import CleanRead

    clean = CleanRead(FLUSH_BYTES) if opts.flush == "clean" else None
    began, done, ok = time.monotonic(), [], True
    for shape in shapes:
        if opts.limit_s and time.monotonic() - began > opts.limit_s:
            print(f"stopped at the time limit before {shape}", flush=True)
            break
        priors = [(label, found[key_of(shape)]) for label, found in winners if key_of(shape) in found]
        picked = [(label, config, problem) for label, config in candidates(problem, shape, target, forms, priors)]
        picked += variant_candidates(variants, shape, target, forms, priors)
        found = time_shape(problem, shape, picked, opts.blocks, opts.placements, flush, clean)
        done.append(found)
        ok = ok and all(row["gated"] for row in found["rows"])
        opts.out.write_text(json.dumps({"target": target.as_dict(), "flush": opts.flush, "shapes": done}, indent=1))
        best, rows = best_by_form(found), found["rows"]
        torch_us = next((r["checked"]["torch_us"] for r in rows if r["gated"]), float("nan"))
        parts = [
            f"{label} {row['checked']['ratio']:.3f} ({row['checked']['ci'][0]:.3f}-{row['checked']['ci'][1]:.3f})"
            + ("" if label.startswith("prior") else f" [{_short(row['config'])}]")
            for label, row in best.items()
        ]
        failed = [r["label"] for r in rows if not r["gated"] and "failed" not in r]
        crashed = [f"{r['label']} [{_short(r['config'])}]" for r in rows if "failed" in r]
        s = shape
        print(
            f"{s['M']}x{s['N']}x{s['K']} {s['layout']}{' +bias' if s['bias'] else ''}: torch {torch_us:.1f} us; "
            + "; ".join(parts)
            + (f"; GATE FAILED: {', '.join(failed)}" if failed else "")
            + (f"; DID NOT RUN: {', '.join(crashed)}" if crashed else "")
            + f" ({len(rows)} configs)",
            flush=True,
        )
    result = summary(done)
    opts.out.write_text(
        json.dumps({"target": target.as_dict(), "flush": opts.flush, "shapes": done, "summary": result}, indent=1)
    )
    if opts.best_report:
        opts.best_report.write_text(json.dumps(best_report(done), indent=1))
    print("summary:", json.dumps(result), flush=True)
    return 0 if ok else 1


def _short(config: dict[str, Any]) -> str:
    """The fields that tell configs apart, e.g. ``128x128x64 w4 s4 SK2``."""
    text = f"{config['BLOCK_M']}x{config['BLOCK_N']}x{config['BLOCK_K']} w{config['num_warps']} s{config['num_stages']}"
    for key, tag in (
        ("SPLIT_K", "split"),
        ("STREAM_K", "SK"),
        ("SK_TAIL", "tail"),
        ("TMA", "tma"),
        ("PERSISTENT", "pers"),
        ("GEMV", "gemv"),
    ):
        if config.get(key) and not (key == "SPLIT_K" and config[key] == 1):
            text += f" {tag}{config[key] if key in ('SPLIT_K', 'STREAM_K') else ''}"
    return text


if __name__ == "__main__":
    sys.exit(main())
