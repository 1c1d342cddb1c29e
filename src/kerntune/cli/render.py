"""Rich rendering of tuning runs and reports for the terminal (the CLI's only presentation code)."""

from __future__ import annotations

import json
import time
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from kerntune.measure.second_timer import PROFILER, SHORT, at_clock
from kerntune.measure.speed_of_light import describe
from kerntune.model import Candidate, Run
from kerntune.model.time_plan import TimePlan
from kerntune.report.summary import RunReport, ShapeReport
from kerntune.store.claims import REFERENCED, ABRecord
from kerntune.store.ledger import LedgerRow


def _ms(c: Candidate | None) -> str:
    if c is None or c.measurement is None:
        return "—"
    m = c.best_measurement or c.measurement
    text = f"{m.median_ms:.4g} ms ±{m.spread * 50:.1f}%"
    if c.confirmed is not None:
        text += f" (search {c.measurement.median_ms:.4g})"
    return text


def speedup_text(x: float | None) -> str:
    """A speedup named by its direction (higher is better): ``1.88x faster``, or ``1.25x slower`` for 0.8, never a
    bare number a reader could take for a time ratio."""
    if x is None or x <= 0:
        return "—"
    return f"{x:.2f}x faster" if x >= 1 else f"{1 / x:.2f}x slower"


def _gate(c: Candidate | None) -> str:
    if c is None or c.verdict is None:
        return "—"
    v = c.verdict
    return f"{v.outcome} (err {v.value:.1e})" if v.value is not None else v.outcome


def shape_table(run: Run, s: ShapeReport) -> Table:
    table = Table(title=f"{run.problem} · {s.shape.key} · {run.dtype} · {run.target.label}", title_justify="left")
    table.add_column("")
    table.add_column("candidate", overflow="fold")
    table.add_column("median ±½(q90−q10), confirmed")
    table.add_column("the winner is")
    table.add_column("gate")
    if s.winner is not None:
        table.add_row("[bold green]winner", s.winner.name, _ms(s.winner), "", _gate(s.winner))
    elif not s.timing_claimed:
        table.add_row("[yellow]no timing", f"{run.target.device_name} claims no timing", "", "", "")
    else:
        table.add_row("[bold red]no winner", "no candidate passed the gate", "", "", "")
    for b in s.baselines:
        status = _ms(b) if b.status == "ok" else f"[red]{b.failure.value if b.failure else b.status}"
        table.add_row(
            f"baseline: {b.label}", b.config.key or b.label, status, speedup_text(s.speedup_over(b)), _gate(b)
        )
    if s.slowest is not None:
        table.add_row(
            "slowest", s.slowest.name, _ms(s.slowest), speedup_text(s.speedup_over(s.slowest)), _gate(s.slowest)
        )
    counts = ", ".join(f"{k} {v}" for k, v in sorted(s.counts.items()))
    table.caption = f"candidates: {counts}" + (f"; {s.pending} pending (resume the tuning)" if s.pending else "")
    table.caption_justify = "left"
    return table


def _ratio_text(s: ShapeReport, f: Candidate) -> str:
    r = s.interleaved.get(f.id or -1)
    if r is None:
        return "—"
    if f is s.reference:
        return "1 (reference)"
    interval = "" if r.n < 2 else f" [{r.low:.3f}, {r.high:.3f}]"
    return f"{r.ratio:.4f}{interval}"


def _second_text(s: ShapeReport, f: Candidate) -> str:
    x = s.second_timer.get(f.id or -1)
    if x is None:
        return "—"
    return f"{x['ratio']:.4f}" if x["agrees"] else f"[red]{x['ratio']:.4f} (>1% apart)"


def _device_led_text(s: ShapeReport, f: Candidate) -> str:
    """The headline column where the second timer is the profiler: its ratio, or the events' where it has none."""
    found = s.headline(f)
    if found is None:
        return "—"
    if found[1] == "reference":
        return "1 (reference)"
    if found[1] == "events":
        return f"{_ratio_text(s, f)} (events)"
    return f"{found[0]:.4f}{at_clock(s.second_timer.get(f.id or -1) or {})}"


def _events_beside_text(s: ShapeReport, f: Candidate) -> str:
    """The events' interleaved ratio beside a profiler-led headline, with the SM clocks its last confirmation round
    read, marked where the two timers are over 1% apart: under a power cap a long compute-bound pair's ratio
    moves with the clock (bf16 8192³ on the H200: 0.995 at boost, 0.980 at the capped clock), so a disagreement
    with a clock beside it says which state each timer saw."""
    x = s.second_timer.get(f.id or -1)
    tel = (f.confirmed.conditions.telemetry or {}) if f.confirmed else {}
    low, high = tel.get("sm_mhz_min"), tel.get("sm_mhz_max")
    text = _ratio_text(s, f) + (at_clock({"sm_mhz_range": [low, high]}) if low and high else "")
    return f"[red]{text} (>1% apart)" if x is not None and "ratio" in x and not x["agrees"] else text


def finalists_table(s: ShapeReport) -> Table:
    checked = next((x["timer"] for x in s.second_timer.values()), None)
    ref = f"time ratio to {s.reference.name}" if s.reference else "time ratio"
    # Per-dispatch device time leads where the device has it (events add a few µs of the device's own start and
    # drain to every sample: a short kernel's ratio is pulled toward 1); a host clock never does (it holds the
    # submit and the wait): there the events lead and it checks them.
    device_led = checked == PROFILER
    title = (
        "finalists: search-time vs confirmed (fresh processes; each timed launch by launch beside the reference; "
        "a time ratio below 1 is faster)"
    )
    caption = None
    if device_led:
        caption = (
            f"ratios by {checked}, the CUDA events' beside them; a ratio the two timers put more than 1% "
            "apart is marked"
        )
    elif checked:
        caption = f"second timer: {checked}; a ratio the two timers put more than 1% apart is marked"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    ratio_cols = (
        (f"{ref}, by kernel time ({SHORT[PROFILER]})", "the same by CUDA events, interleaved")
        if device_led
        else (f"{ref}, interleaved", *((f"the same by {SHORT.get(checked, checked)}",) if checked else ()))
    )
    for col in ("", "candidate", "search median", "confirmed median", "time ratio confirmed / search", *ratio_cols):
        table.add_column(col, overflow="fold")
    for i, f in enumerate(s.finalists):
        search = f.measurement.median_ms if f.measurement else None
        confirmed = f.confirmed.median_ms if f.confirmed else None
        drift = f"{confirmed / search:.3f}" if search and confirmed else "—"
        mark = "[bold green]winner" if f is s.winner else ("baseline" if f.role == "baseline" else "")
        ratios = (
            (_device_led_text(s, f), _events_beside_text(s, f))
            if device_led
            else (_ratio_text(s, f), *((_second_text(s, f),) if checked else ()))
        )
        table.add_row(
            mark if i == 0 or f.role == "baseline" else "",
            f.name,
            f"{search:.4g} ms" if search else "—",
            f"{confirmed:.4g} ms" if confirmed else "—",
            drift,
            *ratios,
        )
    return table


def print_report(console: Console, report: RunReport) -> None:
    run = report.run
    console.print(
        f"tuning run [bold]{run.id}[/] · {run.status} · {run.stop_reason or ''} · strategy {run.strategy} · "
        f"{run.elapsed_s:.1f} s"
    )
    phases: dict[str, float] = {}
    for name, seconds in (run.options.get("phases") or {}).items():  # per slot: the slowest slot's figure
        phase = name.split(":")[-1].removesuffix("_s").replace("_", "-")
        phases[phase] = max(phases.get(phase, 0.0), float(seconds))
    if phases:
        console.print(
            "  wall time by phase: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()), highlight=False
        )
    for s in report.shapes:
        console.print(shape_table(run, s))
        console.print(
            "  configs: "
            + ", ".join(f"{n} {k}" for k, n in s.outcome_counts.items())
            + (f"; {s.coverage}" if s.coverage else ""),
            highlight=False,
        )
        for who, candidate in (("the winner", s.winner), *((b.name, b) for b in s.baselines)):
            sol = s.speed_of_light(candidate)
            if sol is not None:
                console.print(f"  speed of light: {who} runs at {describe(sol)}", highlight=False)
        t = s.seconds
        if t:
            console.print(
                f"  time: compile {t['compile']:.1f} s summed over candidates, gate {t['gate']:.1f} s, "
                f"measure {t['measure']:.1f} s; {t['screened']:.0f} screening and {t['timed']:.0f} full "
                "measurements",
                highlight=False,
            )
        disturbed = s.disturbed
        if disturbed["other_tenant"]:
            console.print(
                f"  [yellow]another process used the GPU[/] during {disturbed['other_tenant']} of "
                f"{disturbed['measurements']} measurements: their figures carry its load; tune again on "
                "an idle device",
                highlight=False,
            )
        if s.finalists:
            console.print(finalists_table(s))
        for f in s.failed:
            kind = f.failure.value if f.failure else "failed"
            reason = f.reason if len(f.reason) <= 200 else f.reason[:197] + "…"
            console.print(f"  [red]failed[/] {f.name} [red]{kind}[/]: {reason}", overflow="fold", highlight=False)


def runs_table(runs: list[Run]) -> Table:
    table = Table(title="tuning runs")
    for col in ("id", "problem", "status", "target", "shapes", "strategy", "elapsed"):
        table.add_column(col)
    for r in runs:
        shapes = "; ".join(s.key for s in r.shapes[:2]) + (" …" if len(r.shapes) > 2 else "")
        table.add_row(r.id, r.problem, r.status, r.target.label, shapes, r.strategy, f"{r.elapsed_s:.1f} s")
    return table


def ledger_table(rows: list[LedgerRow]) -> Table:
    table = Table(title="ledger: failed candidates and claims")
    for col in ("tuning run", "problem", "target", "shape", "candidate", "failure", "reason"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r.run_id, r.problem, r.target.arch, r.shape_key, r.candidate, r.failure, r.reason[:160])
    return table


def ab_lines(r: ABRecord) -> list[str]:
    """The A/B verdict with everything it rests on: ratio and interval, band, processes, hashes, cost."""
    colour = {"win": "green", "loss": "red", "noise": "yellow"}.get(r.verdict, "white")
    lines = [
        f"[bold {colour}]{r.verdict.upper()}[/] {r.reason}",
        f"A = {r.a['text']}   B = {r.b['text']}   scheme {r.scheme} · {r.kind} · "
        f"{r.target.get('device_name') or r.target.get('label', '')}",
    ]
    if r.conditions.get("regime"):
        c = r.conditions
        tel = c.get("telemetry") or {}
        clocks = (
            f"SM {tel['sm_mhz_min']}–{tel['sm_mhz_max']} MHz, "
            if tel.get("available")
            else f"telemetry: {tel.get('reason', 'not available')}; "
        )
        lines.append(
            f"conditions: {c.get('regime')}, {c.get('mode')}; {clocks}"
            f"throttled values: {c.get('throttled_values', 0)}; with another process on the GPU: "
            f"{c.get('other_tenant_values', 0)}; shape {c.get('shape')} {c.get('dtype')}"
        )
    values = " ".join(f"{p.side}:{p.value:.5g}" for p in r.processes)
    reference = r.conditions.get("reference", "default")
    named = "the spec's default config" if reference == "default" else reference
    unit = (
        f"each the side's time over the reference's ({named}) in its process"
        if r.scheme == REFERENCED
        else "the metric"
        if r.a.get("kind") == "command"
        else "ms"
    )
    lines.append(f"values (ABBA order; {unit}): {values}")
    for side in ("A", "B"):
        hashes = ", ".join(f"{k} {v if isinstance(v, str) else ' '.join(v)}" for k, v in r.hashes.get(side, {}).items())
        lines.append(f"md5 {side}: {hashes}")
    if r.expect is not None:
        held = "[red]did not hold[/]" if r.claim_failed else "[green]held[/]"
        lines.append(f"expected {r.expect}: {held}")
    lines.append(f"cost: {r.wall_s:.1f} s wall for {len(r.processes)} measurements")
    return lines


class LineProgress:
    """One line per finished measurement (A/B progress), on the given console."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def finished(self, label: str, status: str, detail: str) -> None:
        self.console.print(f"  {label}: {status} {detail}", highlight=False)


class JsonLinesProgress:
    """Tune progress as one JSON object per line (``--json`` runs, on stderr): a ``planned`` event with the tuning
    run, its evaluations and its time plan, then a ``finished`` event per evaluation with the seconds since the start,
    so a caller that stops the tuning knows what finished (``kerntune show TUNING_RUN`` reads every finished shape)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.started, self.done = stream, time.monotonic(), 0

    def _emit(self, event: dict[str, Any]) -> None:
        self.stream.write(json.dumps({**event, "elapsed_s": round(time.monotonic() - self.started, 3)}) + "\n")
        self.stream.flush()

    def planned(self, run: Run, total: int, plan: TimePlan) -> None:
        self._emit(
            {
                "event": "planned",
                "run": run.id,
                "problem": run.problem,
                "shapes": len(run.shapes),
                "evaluations": total,
                "estimate": plan.estimate(),
                "plan": plan.describe(),
            }
        )

    def finished(self, label: str, status: str, detail: str) -> None:
        self.done += 1
        self._emit({"event": "finished", "label": label, "status": status, "detail": detail, "done": self.done})


class BarProgress:
    """The tune progress bar (rich), fed by ``kerntune.tune.run``'s Progress protocol."""

    def __init__(self, console: Console) -> None:
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"),
            console=console,
            transient=False,
        )
        self.task: TaskID | None = None

    def __enter__(self) -> BarProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def planned(self, run: Run, total: int, plan: TimePlan) -> None:
        self.bar.console.print(
            f"tuning {run.problem} ({run.id}): {len(run.shapes)} shapes, {total} evaluations "
            f"planned; {plan.describe()}",
            highlight=False,
        )
        self.task = self.bar.add_task(f"tuning {run.problem} ({run.id})", total=total, last="")

    def finished(self, label: str, status: str, detail: str) -> None:
        if self.task is not None:
            text = f"{label[:48]}: {status} {detail[:60]}"
            self.bar.update(self.task, advance=1, last=text)


def inspect_table(rows: list[dict[str, Any]]) -> Table:
    """One column per (kernel, target): resources, occupancy, and the non-zero instruction categories."""
    table = Table(title=f"inspect {rows[0]['config'] if rows else ''} at {rows[0]['shape'] if rows else ''}")
    table.add_column("")
    for r in rows:
        table.add_column(f"{r['kernel']}\n{r['target']}", overflow="fold")
    keys: list[str] = []
    for r in rows:
        for section in ("resources", "census"):
            keys += [k for k, v in (r.get(section) or {}).items() if v and k not in keys]
    for key in keys:
        table.add_row(
            key, *[str((r.get("resources") or {}).get(key, (r.get("census") or {}).get(key, ""))) for r in rows]
        )
    table.add_row("occupancy", *[_occupancy_text(r) for r in rows])
    table.add_row("next boundary", *[str(r.get("next_boundary") or "") for r in rows])
    if any("internal" in r or "not_exposed" in r for r in rows):  # a driver's own reading (Vulkan)
        table.add_row("compiled by", *[str(r.get("compiler", "")) for r in rows])
        table.add_row(
            "internal representations",
            *[
                ", ".join(
                    f"{i['name']} ({len(i['text'].splitlines())} lines)"
                    if "text" in i
                    else f"{i['name']} ({i['bytes']} bytes)"
                    for i in r.get("internal", [])
                )
                or (f"none: {r['internal_note']}" if r.get("internal_note") else "")
                for r in rows
            ],
        )
        table.add_row("not exposed", *[str(r.get("not_exposed", "")) for r in rows])
    table.add_row("error", *[str(r.get("error", ""))[:200] for r in rows])
    return table


PROFILE_COLUMNS = (
    ("duration_s", "time µs", 1e6),
    ("compute_sol_pct", "compute SOL %", 1.0),
    ("memory_sol_pct", "memory SOL %", 1.0),
    ("dram_bytes_per_s", "DRAM GB/s", 1e-9),
    ("achieved_occupancy_pct", "achieved occ. %", 1.0),
    ("theoretical_occupancy_pct", "theoretical occ. %", 1.0),
    ("registers", "regs", 1.0),
)


def profile_table(rows: list[dict[str, Any]]) -> Table:
    """One row per profiled kernel launch: the candidate, the kernel and its counters."""
    table = Table(title="hardware counters (clocks as found)")
    for column in ("shape", "candidate", "kernel", *(c[1] for c in PROFILE_COLUMNS)):
        table.add_column(column, overflow="fold")
    for r in rows:
        if "error" in r:
            table.add_row(r["shape"], r["label"], f"[red]{r['error'][:160]}[/]", *[""] * len(PROFILE_COLUMNS))
            continue
        for k in r["kernels"]:
            m = k["metrics"]
            cells = [
                f"{m[key] * scale:.4g}" if isinstance(m.get(key), float) else str(m.get(key, ""))
                for key, _, scale in PROFILE_COLUMNS
            ]
            table.add_row(r["shape"], r["label"], k["kernel"][:60], *cells)
    return table


def diff_table(rows: list[dict[str, Any]], diff: list[dict[str, Any]]) -> Table:
    """Two configs side by side: only the figures that differ, per (kernel, target), with B − A."""
    a, b = rows[0]["config"], rows[-1]["config"]
    table = Table(title=f"A = {a}\nB = {b}\nat {rows[0]['shape']}: what differs")
    for column in ("kernel", "target", "metric", "A", "B", "B − A"):
        table.add_column(column, overflow="fold")
    for d in diff:
        delta = "" if d["delta"] is None else f"{d['delta']:+.4g}"
        table.add_row(d["kernel"], d["target"], d["metric"], str(d["a"]), str(d["b"]), delta)
    if not diff:
        table.add_row("", "", "nothing differs", "", "", "")
    return table


def _occupancy_text(row: dict[str, Any]) -> str:
    occ = row.get("occupancy")
    if not occ:
        return "—"
    if "waves_per_simd" in occ:  # AMD counts waves per SIMD
        return f"{occ['waves_per_simd']} waves/SIMD ({occ['fraction']:.0%}, limited by {occ['limiter']})"
    return (
        f"{occ['blocks_per_sm']} blocks/SM, {occ['warps_per_sm']} warps/SM ({occ['fraction']:.0%}, limited by "
        f"{occ['limiter']})"
    )
