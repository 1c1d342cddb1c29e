"""The shape corpus: what a program ran, one JSON line per (op, shape, dtype, layout, bias). Standard library only.

One format, written and read everywhere: ``kerntune scope --corpus`` writes the library operators a profiled
program ran (``aten::mm``, ``aten::addmm``...); the runtime writes the keys a table missed
(``KERNTUNE_RECORD_UNTUNED``, the spec's op name); ``kerntune tune SPEC --shapes-from`` reads both. A line::

    {"op": "aten::addmm", "shape": {"M": 16, "N": 4096, "K": 4096}, "dtype": "bfloat16", "layout": "NT",
     "bias": 1, "calls": 64, "device_us": 812.5, "source": null, "device": {}}

``layout`` names each GEMM operand in order, A then B: ``N`` when it is read as given (row-major, last stride 1),
``T`` when it is the transpose of a row-major matrix (an ``nn.Linear`` weight reaches ``aten::mm`` as ``W.t()``:
layout ``NT``). ``bias`` is 1 when the operator adds a bias vector. Both are null for operators that are not
GEMM-like. ``source`` (the kernel source hash) and ``device`` are set on lines the runtime records. Lines of the
older form ``{"key": {...}, "decision": ...}`` (one missed key) are read too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

DEVICE_FIELDS = ("arch", "compute_units", "device_name")
GEMM_FIELDS = ("layout", "bias")
"""Fields a line carries beside its shape; a spec that takes them has them among its shape fields."""


class CorpusError(ValueError):
    """A corpus line that cannot be read, with where and what to do."""


@dataclass(frozen=True)
class CorpusLine:
    op: str
    shape: dict[str, Any]
    dtype: str = ""
    layout: str | None = None
    bias: int | None = None
    calls: int = 0
    device_us: float | None = None
    source: str | None = None
    device: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> str:
        """What makes two lines the same call: everything but the counts."""
        return json.dumps(
            [self.op, self.shape, self.dtype, self.layout, self.bias, self.source, self.device], sort_keys=True
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(", ", ": "))

    def shape_for(self, fields: Sequence[str]) -> dict[str, Any] | None:
        """The spec's shape fields from this line (``layout`` and ``bias`` included when the spec has them);
        None when the line lacks one."""
        merged = {**self.shape, **{k: getattr(self, k) for k in GEMM_FIELDS if getattr(self, k) is not None}}
        if any(f not in merged for f in fields):
            return None
        return {f: merged[f] for f in fields}

    @classmethod
    def from_key(cls, fields: Mapping[str, Any], calls: int = 0) -> CorpusLine:
        """A runtime key (the fields a dispatcher keyed one call by) as a line: op, source, dtype and the device's
        fields apart, ``layout`` and ``bias`` lifted out, the rest its shape."""
        rest = {k: v for k, v in fields.items() if k not in ("op", "source", "dtype", *DEVICE_FIELDS, *GEMM_FIELDS)}
        bias = fields.get("bias")
        return cls(
            op=str(fields.get("op", "")),
            shape=rest,
            dtype=str(fields.get("dtype", "")),
            layout=fields.get("layout"),
            bias=None if bias is None else int(bias),
            calls=calls,
            source=fields.get("source"),
            device={k: fields[k] for k in DEVICE_FIELDS if k in fields},
        )


def parse_line(text: str, where: str) -> CorpusLine:
    """One line; a CorpusError says what is wrong at ``where`` (``PATH line N``)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorpusError(
            f"{where} is not JSON ({exc.msg}): a corpus is JSON lines as `kerntune scope --corpus` "
            "or KERNTUNE_RECORD_UNTUNED write them"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("key"), dict) and "op" not in data:
        return CorpusLine.from_key(data["key"], calls=int(data.get("calls") or 0))  # the older one-key form
    if not (isinstance(data, dict) and isinstance(data.get("op"), str) and isinstance(data.get("shape"), dict)):
        raise CorpusError(
            f"{where} is not a corpus line: it needs an 'op' string and a 'shape' object "
            "(op, shape, dtype, layout, bias, calls, device_us)"
        )
    try:
        bias = data.get("bias")
        device_us = data.get("device_us")
        return CorpusLine(
            op=data["op"],
            shape=dict(data["shape"]),
            dtype=str(data.get("dtype") or ""),
            layout=data.get("layout"),
            bias=None if bias is None else int(bias),
            calls=int(data.get("calls") or 0),
            device_us=None if device_us is None else float(device_us),
            source=data.get("source"),
            device=dict(data.get("device") or {}),
        )
    except (TypeError, ValueError) as exc:
        raise CorpusError(
            f"{where}: a field has the wrong type ({exc}): calls is an integer, device_us a number, bias 0 or 1"
        ) from None


def read_corpus(path: Path) -> list[CorpusLine]:
    """Every line of ``path`` in order (blank lines skipped). OSError and CorpusError pass to the caller."""
    return [
        parse_line(text, f"{path} line {n}") for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip()
    ]


def merge(lines: Iterable[CorpusLine]) -> list[CorpusLine]:
    """Lines of one call summed (calls, device time), in first-seen order: a corpus appended to by several runs
    or processes reads as one."""
    merged: dict[str, CorpusLine] = {}
    for line in lines:
        was = merged.get(line.identity)
        if was is None:
            merged[line.identity] = line
            continue
        times = [t for t in (was.device_us, line.device_us) if t is not None]
        merged[line.identity] = replace(was, calls=was.calls + line.calls, device_us=sum(times) if times else None)
    return list(merged.values())


def top(lines: Sequence[CorpusLine], n: int) -> list[CorpusLine]:
    """The ``n`` lines with the most device time (lines without one after, by calls), ties in corpus order."""
    order = sorted(
        range(len(lines)), key=lambda i: (lines[i].device_us is None, -(lines[i].device_us or 0.0), -lines[i].calls, i)
    )
    return [lines[i] for i in order[:n]]


def append_corpus(path: Path, lines: Iterable[CorpusLine]) -> None:
    """Append ``lines``; each is one ``write`` of one line, so processes appending to one corpus do not
    interleave inside a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        for line in lines:
            handle.write(line.to_json() + "\n")
            handle.flush()
