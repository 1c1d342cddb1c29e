"""How ``kerntune ab`` gets its values: spec sides in worker processes (one fresh process per value, or one
shared worker timing both sides interleaved: two configs or two kernel sources of one spec), command sides as
fresh runs of a shell command.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import statistics
import subprocess
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kerntune.compare.sides import Side, parse_selector
from kerntune.errors import KerntuneError, SpecError, UsageError
from kerntune.exec.pool import Outcome, Worker
from kerntune.measure.stats import paired_log_ratio
from kerntune.model import Config, Problem, Shape, Target
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.tune.inputs import (
    EVALUATE,
    EVALUATE_PAIR,
    SETUP,
    measure_options,
    parse_value,
    require_graphs,
    resolve_shapes,
)
from kerntune.tune.spec import load_spec

if TYPE_CHECKING:
    from kerntune.tune.evaluate import CandidatePayload, CandidateReply

Value = tuple[float, tuple[float, ...], dict[str, Any]]
"""One measured value: the number compared, the raw samples behind it, and what else was recorded."""


@dataclass(frozen=True)
class ABRequest:
    a: str
    b: str
    spec: str | None = None
    shape: dict[str, str] = field(default_factory=dict)
    dtype: str | None = None
    device: str = ""
    processes: int | None = None
    """Values per side (processes in the fresh scheme); default ``Settings.ab_processes``."""
    scheme: str = "auto"
    """``auto`` (in-process for two configs or kernel sources of one spec, fresh otherwise), ``fresh`` or
    ``in-process``."""
    metric: str | None = None
    """Regular expression whose first group is a command side's metric (default: its last number)."""
    higher_is_better: bool = False
    budget_s: float | None = None
    """Wall-clock seconds the whole comparison may take (A/B, its A/A band, more values while undecided): past
    it no new pair starts, beyond the two an interval needs; the verdict is given on the pairs taken."""
    expect: str | None = None
    recalibrate: bool = False
    seed: int = 0
    reference: str = "default"
    """What fresh processes of one spec time beside each side: ``default`` (the spec's default config),
    ``@NAME`` (one of its baselines, e.g. ``@torch.matmul``: a kernel an env: change to the spec's own kernel does
    not touch), ``@K=V,...`` (a config), or ``none`` (each side timed alone)."""

    def __post_init__(self) -> None:
        if self.reference not in ("default", "none") and not self.reference.startswith("@"):
            raise UsageError(
                f"--reference {self.reference!r}: give default, none, @BASELINE (one of the spec's "
                "baselines, e.g. @torch.matmul) or @NAME=VALUE[,...] (a config of the spec)"
            )


class SideFailed(KerntuneError):
    """A side did not produce a trusted value (gate failure, crash, hang): no verdict can be given."""

    exit_code = 1


class SpecRunner:
    """Measures spec sides: one fresh worker per value, or one shared worker (in-process scheme)."""

    def __init__(
        self, sides: tuple[Side, Side], request: ABRequest, settings: Settings, store: Store, in_process: bool
    ) -> None:
        self.sides, self.request, self.settings, self.store = sides, request, settings, store
        self.in_process = in_process
        # Fresh processes of one spec file (two configs or sources, --scheme fresh): every process also times the
        # spec's default config, from the spec's own source, interleaved with its side — a fixed reference, so
        # what differs from process to process (clocks, placement, a CPU device's threads) divides out.
        # Interleaving is eager only: under KERNTUNE_MODE=graph each process times its side alone, as before.
        # The reference runs under its process's environment: an env: side whose variables alter the spec's own
        # kernel alters a reference of that kernel too; --reference @BASELINE names one it leaves alone (cuBLAS
        # beside a Triton kernel), --reference none times each side alone.
        self.referenced = (
            request.reference != "none"
            and not in_process
            and sides[0].spec_path == sides[1].spec_path
            and settings.mode == "eager"
        )
        self.gated: set[int] = set()
        self.shared: Worker | None = None
        self.target: dict[str, Any] = {}
        self.payloads = [self._payload(side) for side in sides]
        if in_process or self.referenced:  # a worker holds the spec's kernel and the sides' sources ("" = the spec's)
            for side, payload in zip(sides, self.payloads, strict=True):
                payload["kernel_source"] = side.kernel_source
        self.reference: CandidatePayload | None = None
        if self.referenced:
            self.reference = self._reference_payload(sides[0])

    def _reference_payload(self, side: Side) -> CandidatePayload:
        """The fixed kernel timed beside each side: the spec's default config, or what --reference names."""
        problem = load_spec(side.spec_path).problem
        text = self.request.reference
        if text == "default":
            config, baseline = problem.space.default_config(), None
        else:  # "@...", as ABRequest checked
            config_text, baseline_name = parse_selector(text[1:], f"--reference {text}")
            named = Side(
                f"--reference {text}", "spec", spec_path=side.spec_path, config=config_text, baseline=baseline_name
            )
            config, baseline = _side_config(problem, named, Shape.of(self.payloads[0]["shape"]))
        reference = self.payloads[0].copy()
        reference["config"], reference["baseline_kernel"], reference["kernel_source"] = config.as_dict(), baseline, ""
        return reference

    def _payload(self, side: Side) -> CandidatePayload:
        loaded = load_spec(side.spec_path)
        problem = loaded.problem
        shape = resolve_shapes(problem, [self.request.shape] if self.request.shape else [])[0]
        dtype = self.request.dtype or problem.dtypes[0]
        if dtype not in problem.dtypes:
            raise UsageError(f"dtype {dtype!r} is not one of {side.text}'s dtypes: {', '.join(problem.dtypes)}")
        config, baseline = _side_config(problem, side, shape)
        self.shape_key = shape.key
        self.dtype = dtype
        return {
            "shape": shape.as_dict(),
            "dtype": dtype,
            "seeds": [self.request.seed * 1000 + i + 1 for i in range(self.settings.gate_seeds)],
            "config": config.as_dict(),
            "baseline_kernel": baseline,
            "measure": measure_options(self.settings),
        }

    def work(self, index: int) -> str:
        """What side ``index`` runs, by content and resolved config: equal for both sides means an A/A."""
        payload = self.payloads[index]
        return "|".join(
            (
                self.sides[index].file_digest(),
                repr(sorted(payload["config"].items())),
                str(payload["baseline_kernel"]),
                repr(self.sides[index].env),
            )
        )

    def _worker(self, index: int) -> Worker:
        side = self.sides[index]
        if self.in_process or self.referenced:  # the spec as written, every side's kernel source beside it
            setup = (
                SETUP,
                {
                    "spec_path": side.spec_path,
                    "device": self.request.device,
                    "variants": sorted({s.kernel_source for s in self.sides if s.kernel_source}),
                },
            )
        else:
            setup = (
                SETUP,
                {"spec_path": side.spec_path, "device": self.request.device, "kernel_source": side.kernel_source},
            )
        log = self.store.home / "logs" / f"ab-{int(time.time())}-{secrets.token_hex(2)}.log"
        env = {**os.environ, **dict(side.env)} if side.env else None  # env: sides, set at the process's start
        worker = Worker(setup, log_path=log, env=env, setup_timeout_s=self.settings.setup_timeout_s)
        started = worker.start()
        try:
            require_graphs(self.settings, started)
            if not self.target:
                self._check_on(Target.from_dict(started["target"]))
        except UsageError:
            worker.stop()
            raise
        self.target = started["target"]
        return worker

    def _check_on(self, target: Target) -> None:
        """The sides' configs against the constraints that read the target, now that a worker has named it."""
        checked = [
            (side.text, side.spec_path, payload) for side, payload in zip(self.sides, self.payloads, strict=True)
        ]
        if self.reference is not None:
            checked.append((f"--reference {self.request.reference}", self.sides[0].spec_path, self.reference))
        for text, spec_path, payload in checked:
            if payload["baseline_kernel"] is None:  # the spec's kernel at a config (a baseline's config included)
                _refuse_broken(
                    load_spec(spec_path).problem, text, Config.of(payload["config"]), Shape.of(payload["shape"]), target
                )

    def value(self, index: int) -> Value:
        """One fresh process measuring side ``index``: its median is the value, or, with a reference, its time
        over the reference's, timed interleaved in that process (the median log ratio over A B B A blocks)."""
        if self.reference is not None:
            return self._referenced_value(index)
        worker = self._worker(index)
        try:
            gate = index not in self.gated
            outcome = worker.call(EVALUATE, {**self.payloads[index], "gate": gate}, self.settings.candidate_timeout_s)
        finally:
            worker.stop()
        value = self._checked(outcome, index)
        self.gated.add(index)
        return self._value(value, gate)

    def _referenced_value(self, index: int) -> Value:
        assert self.reference is not None
        worker = self._worker(index)
        gate = index not in self.gated
        try:
            payload = {
                "a": {**self.reference, "gate": gate},
                "b": {**self.payloads[index], "gate": gate},
                "measure": self.payloads[index]["measure"],
            }
            outcome = worker.call(EVALUATE_PAIR, payload, 2 * self.settings.candidate_timeout_s)
        finally:
            worker.stop()
        ref, mine = self._split(outcome, (None, index))
        self.gated.add(index)
        _, ref_samples, _ = self._value(ref, gate)
        median, samples, info = self._value(mine, gate)
        ratio = math.exp(paired_log_ratio(ref_samples, samples))
        info.update(median_ms=median, reference_ms=statistics.median(ref_samples), over_reference=ratio)
        return ratio, samples, info

    def pair(self) -> list[Value]:
        """One interleaved round in the shared worker: A's and B's medians over samples taken side by side."""
        if self.shared is None:
            self.shared = self._worker(0)
        gate = not self.gated
        payload = {
            "a": {**self.payloads[0], "gate": gate},
            "b": {**self.payloads[1], "gate": gate},
            "measure": self.payloads[0]["measure"],
        }
        outcome = self.shared.call(EVALUATE_PAIR, payload, 2 * self.settings.candidate_timeout_s)
        sides = self._split(outcome, (0, 1))
        self.gated.update((0, 1))
        a, b = (self._value(v, gate) for v in sides)
        b[2]["paired_log_ratio"] = paired_log_ratio(a[1], b[1])
        return [a, b]

    def _split(self, outcome: Outcome, owners: tuple[int | None, int]) -> tuple[CandidateReply, CandidateReply]:
        """An EVALUATE_PAIR outcome as its two checked results; ``owners``: the side index timed as ``a`` and as
        ``b`` (None: the reference), so a failure names who failed."""
        if outcome.status == "ok" and "failed" in outcome.value:
            self._checked(replace(outcome, value=outcome.value["result"]), owners["AB".index(outcome.value["failed"])])
        a, b = (
            self._checked(replace(outcome, value=outcome.value[n]) if outcome.status == "ok" else outcome, i)
            for n, i in zip(("a", "b"), owners, strict=True)
        )
        return a, b

    def _checked(self, outcome: Outcome, index: int | None) -> CandidateReply:
        """The result of side ``index`` (None: the reference, the spec's default config), or the failure raised."""
        who, text = (
            ("the reference", "the spec's default config")
            if index is None
            else (f"side {'AB'[index]}", self.sides[index].text)
        )
        if outcome.status == "error" and outcome.kind in ("SpecError", "BackendUnavailable"):
            raise SpecError(outcome.reason)
        if outcome.status != "ok" or outcome.value.get("failure"):
            failure = outcome.value.get("failure", {}) if outcome.status == "ok" else {}
            kind = failure.get("kind", outcome.kind)
            reason = failure.get("reason", outcome.reason)
            raise SideFailed(f"{who} ({text}) failed: {kind}: {reason}")
        value: CandidateReply = outcome.value
        if not value.get("samples_ms"):
            raise UsageError(
                f"{text}: this device claims no timing ({value.get('timing', '')}); an A/B needs a timed device"
            )
        return value

    @staticmethod
    def _value(value: CandidateReply, gated: bool) -> Value:
        samples = tuple(float(x) for x in value["samples_ms"])
        info = {
            "binary_hash": value.get("binary_hash"),
            "conditions": value.get("conditions"),
            "ci_ms": value.get("ci_ms"),
            "gated": gated,
        }
        return statistics.median(samples), samples, info

    def close(self) -> None:
        if self.shared is not None:
            self.shared.stop()


class CommandRunner:
    """Runs command sides: each value is one fresh run of the command; its metric is parsed from stdout."""

    def __init__(self, sides: tuple[Side, Side], request: ABRequest, settings: Settings) -> None:
        self.sides, self.request, self.settings = sides, request, settings
        try:
            self.pattern = re.compile(request.metric) if request.metric else None
        except re.error as exc:
            raise UsageError(f"--metric {request.metric!r} is not a regular expression: {exc}") from None
        self.target = {"label": "host (commands)"}
        self.shape_key, self.dtype = "", ""

    def value(self, index: int) -> Value:
        side = self.sides[index]
        start = time.perf_counter()
        try:
            done = subprocess.run(
                ["bash", "-c", side.command],
                capture_output=True,
                text=True,
                timeout=self.settings.candidate_timeout_s,
                env={**os.environ, **dict(side.env)} if side.env else None,
            )
        except subprocess.TimeoutExpired:
            raise SideFailed(
                f"side {'AB'[index]} ({side.command}) ran past "
                f"{self.settings.candidate_timeout_s:g} s (KERNTUNE_CANDIDATE_TIMEOUT_S)"
            ) from None
        if done.returncode != 0:
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])
            raise SideFailed(f"side {'AB'[index]} ({side.command}) exited with {done.returncode}: {tail}")
        metric = _metric(done.stdout, self.pattern, side.command)
        value = 1.0 / metric if self.request.higher_is_better else metric
        return value, (metric,), {"wall_s": time.perf_counter() - start, "metric": metric}

    def work(self, index: int) -> str:
        return self.sides[index].identity()

    def close(self) -> None:
        pass


def _metric(stdout: str, pattern: re.Pattern[str] | None, command: str) -> float:
    if pattern is not None:
        found = pattern.findall(stdout)
        text = found[-1] if found else None
        text = text[0] if isinstance(text, tuple) else text
    else:
        numbers = re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", stdout)
        text = numbers[-1] if numbers else None
    try:
        value = float(text) if text is not None else None
    except ValueError:
        value = None
    if value is None or value <= 0:
        raise SideFailed(
            f"`{command}` printed no positive metric{' matching --metric' if pattern else ''}; "
            f"its output ended with {stdout.strip()[-120:]!r}"
        )
    return value


def _side_config(problem: Problem, side: Side, shape: Shape) -> tuple[Config, str | None]:
    if side.baseline:
        names = [b.name for b in problem.baselines]
        if side.baseline not in names:
            raise UsageError(
                f"{side.text}: no baseline {side.baseline!r} in this spec (it has: "
                f"{', '.join(names) or 'none'}); use @NAME=VALUE for a config"
            )
        match = next(b for b in problem.baselines if b.name == side.baseline)
        if match.kernel is not None:
            return Config.of({}), match.name
        return Config.of(dict(match.config or {})), None
    params = set(problem.space.params)
    unknown = [k for k in side.config if k not in params]
    if unknown:
        raise UsageError(f"{side.text}: {unknown[0]!r} is not a parameter of this spec ({', '.join(sorted(params))})")
    config = Config.of(
        {
            **problem.space.default_config().as_dict(),
            **{k: parse_value(v, f"config {k}") for k, v in side.config.items()},
        }
    )
    _refuse_broken(problem, side.text, config, shape, None)
    return config, None


def _refuse_broken(problem: Problem, text: str, config: Config, shape: Shape, target: Target | None) -> None:
    """A config that breaks a constraint is refused before it is timed. Without a target (the parent, before any
    worker met the device) only the constraints that do not read the target are judged; the rest once a worker
    has named its Target (TMA on sm_90, say)."""
    reason = problem.space.check(config, shape, target, target_unknown=target is None)
    if reason is not None:
        raise UsageError(
            f"{text}: config {config.key} violates the constraint {reason!r} at {shape.key}"
            + (f" on {target.arch}" if target is not None else "")
        )
