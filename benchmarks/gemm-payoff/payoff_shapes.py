"""The GEMM payoff suite's shapes (benchmarks/specs/gemm_payoff_shapes.txt): read by group through the CLI's own
``--shape`` parser, sliced into parts, kept to what a spec's constraints admit, and the training group derived
and checked against a scope corpus of the real step.

    python benchmarks/gemm-payoff/payoff_shapes.py args FILE [--spec SPEC] [--group NAME] [--part I/N]
        the I-th of N contiguous slices of the file's shapes (of group NAME alone, with --group) as `--shape`
        arguments for `kerntune tune`; with --spec, only those the spec's constraints leave a config for (the
        others named on stderr)
    python benchmarks/gemm-payoff/payoff_shapes.py check-corpus FILE CORPUS
        the corpus of `kerntune scope --corpus` of train_step.py against the file's training group: exit 0 where
        the group is the corpus' hottest GEMMs by FLOPs x calls (ties at the boundary allowed), else 1
    python benchmarks/gemm-payoff/payoff_shapes.py training [--layers 4 ...]
        the derivation: every GEMM of the training step, ranked by FLOPs x calls a step

Exit 2 with one line on bad arguments (a missing file, a bad shape line, a bad part, a group the file lacks).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "gemm"))  # gemm_forms: the shape lines' reader

GROUPS = ("suite", "training", "decode-odd-n")
DEFAULT_FILE = ROOT / "benchmarks" / "specs" / "gemm_payoff_shapes.txt"
SERVED_OPS = ("aten::mm", "aten::addmm")


@dataclass(frozen=True)
class PayoffShape:
    """One line of the file: its group and its shape (M, N, K, layout, bias)."""

    group: str
    shape: dict[str, Any]

    @property
    def key(self) -> tuple[int, int, int, str, int]:
        s = self.shape
        return int(s["M"]), int(s["N"]), int(s["K"]), str(s["layout"]), int(s["bias"])

    @property
    def text(self) -> str:
        """The shape as a `--shape` value (``bias=1`` only where it has one)."""
        m, n, k, layout, bias = self.key
        return f"M={m},N={n},K={k},layout={layout}" + (",bias=1" if bias else "")


def read_payoff_shapes(path: Path) -> list[PayoffShape]:
    """Every shape of the file in order, each in the group its latest ``# group: NAME`` line opened. A ValueError
    names the line that is wrong: a shape the CLI's parser refuses, a layout that is not one of NN, NT, TN, TT, a
    shape before any group, a group not in GROUPS, or a shape given twice."""
    from gemm_forms import parse_shape  # the CLI's --shape parser, as the gemm suite reads llm_gemm_shapes.txt

    found: list[PayoffShape] = []
    group, seen = "", set()
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if line.startswith("#"):
            words = line.lstrip("#").strip()
            if words.startswith("group:"):
                group = words.split(":", 1)[1].strip()
                if group not in GROUPS:
                    raise ValueError(f"{path} line {number}: group {group!r} is not one of {', '.join(GROUPS)}")
            continue
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            shape = parse_shape(line)
        except ValueError as exc:
            raise ValueError(f"{path} line {number}: {exc}") from None
        if shape["layout"] not in ("NN", "NT", "TN", "TT") or int(shape["bias"]) not in (0, 1):
            raise ValueError(f"{path} line {number}: {line!r}: layout is one of NN, NT, TN, TT and bias 0 or 1")
        if not group:
            raise ValueError(f"{path} line {number}: a shape before the first '# group: NAME' line")
        item = PayoffShape(group, shape)
        if item.key in seen:
            raise ValueError(f"{path} line {number}: {item.text} is given twice")
        seen.add(item.key)
        found.append(item)
    if not found:
        raise ValueError(f"{path} holds no shape")
    return found


def parse_part(text: str) -> tuple[int, int]:
    """``I/N`` as (I, N), 1 <= I <= N; a ValueError otherwise."""
    i, sep, n = text.partition("/")
    if not (sep and i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
        raise ValueError(f"part {text!r}: give I/N, the I-th of N slices (1 <= I <= N)")
    return int(i), int(n)


def of_group(items: Sequence[PayoffShape], group: str | None, path: Path) -> list[PayoffShape]:
    """The shapes of ``group`` (every shape where None); a ValueError where the file holds none of it."""
    chosen = [item for item in items if group in (None, item.group)]
    if not chosen:
        raise ValueError(f"{path} holds no shape of group {group!r}")
    return chosen


def part_of(items: Sequence[PayoffShape], part: str) -> list[PayoffShape]:
    """The I-th of N contiguous slices of ``items``, as even as whole shapes allow: the split of the time-budget
    suite's ``shape_args`` (shape k of NR, from 1, is in slice int((k - 1) * N / NR) + 1)."""
    i, n = parse_part(part)
    return [item for k, item in enumerate(items) if (k * n) // len(items) + 1 == i]


def admitted(spec: Path, shapes: Sequence[PayoffShape]) -> tuple[list[PayoffShape], dict[str, str]]:
    """The shapes the spec's constraints leave at least one config for (``kerntune tune`` refuses a run holding
    any other: kernels/gluon_gemm's TMA needs 16-byte row pitches, which an odd N has not), and for each left out
    the constraints that emptied it. Target-dependent constraints are not judged here (the tuner judges them on
    the device)."""
    from kerntune.model import Shape
    from kerntune.tune.spec import load_spec

    problem = load_spec(spec).problem
    kept: list[PayoffShape] = []
    left: dict[str, str] = {}
    for item in shapes:
        valid, rejected = problem.space.valid_configs(Shape.of(item.shape), None)
        if valid:
            kept.append(item)
        else:
            left[item.text] = ", ".join(sorted(rejected)) or "no config"
    return kept, left


@dataclass(frozen=True)
class TrainingGemm:
    """One aten::mm key of the training step: which layer kind and pass, its shape, and its calls a step."""

    name: str
    shape: dict[str, Any]
    calls: int

    @property
    def flops(self) -> float:
        return 2.0 * int(self.shape["M"]) * int(self.shape["N"]) * int(self.shape["K"])

    @property
    def load(self) -> float:
        """FLOPs x calls a step: the rank's measure."""
        return self.flops * self.calls


PASSES = ("forward", "input gradient", "weight gradient")


def training_gemms(
    hidden: int = 2048,
    intermediate: int = 5632,
    heads: int = 32,
    kv_heads: int = 4,
    vocab: int = 32000,
    tokens: int = 2048,
    layers: int = 4,
) -> list[TrainingGemm]:
    """Every aten::mm key of a bf16-autocast training step of LlamaForCausalLM (bias-free nn.Linear layers,
    attention in SDPA's fused kernels), ranked by FLOPs x calls a step; ties in the step's order: layer kinds as
    listed here, then forward, input gradient, weight gradient. A layer of in -> out over T rows makes three:
    forward x·Wᵀ (M=T, N=out, K=in, NT), input gradient dy·W (M=T, N=in, K=out, NN), weight gradient dyᵀ·x
    (M=out, N=in, K=T, TN). Layer kinds of equal sizes share their keys (q and o, k and v, gate and up)."""
    kv = kv_heads * (hidden // heads)
    kinds = [
        ("gate_proj/up_proj", hidden, intermediate, 2 * layers),
        ("lm_head", hidden, vocab, 1),
        ("down_proj", intermediate, hidden, layers),
        ("q_proj/o_proj", hidden, hidden, 2 * layers),
        ("k_proj/v_proj", hidden, kv, 2 * layers),
    ]
    found: list[TrainingGemm] = []
    for name, fan_in, fan_out, calls in kinds:
        shapes = (
            {"M": tokens, "N": fan_out, "K": fan_in, "layout": "NT", "bias": 0},
            {"M": tokens, "N": fan_in, "K": fan_out, "layout": "NN", "bias": 0},
            {"M": fan_out, "N": fan_in, "K": tokens, "layout": "TN", "bias": 0},
        )
        found += [TrainingGemm(f"{name} {p}", s, calls) for p, s in zip(PASSES, shapes, strict=True)]
    order = sorted(range(len(found)), key=lambda i: (-found[i].load, i))
    return [found[i] for i in order]


def _corpus_key(line: Any) -> tuple[int, int, int, str, int]:
    return int(line.shape["M"]), int(line.shape["N"]), int(line.shape["K"]), str(line.layout), int(line.bias or 0)


def check_corpus(shapes: Sequence[PayoffShape], corpus: Path) -> tuple[bool, list[str]]:
    """Whether the file's training group is the corpus' hottest library GEMMs by FLOPs x calls (every one of them
    in the corpus, none outranked by a key outside the group; a tie at the boundary passes), and the lines that
    say so: each key of the corpus by rank, its FLOPs x calls, calls, device time and whether the group holds it."""
    from kerntune.runtime.corpus import merge, read_corpus

    group = {s.key for s in shapes if s.group == "training"}
    lines = [line for line in merge(read_corpus(corpus)) if line.op in SERVED_OPS and line.layout]
    load = {_corpus_key(line): 2.0 * line.shape["M"] * line.shape["N"] * line.shape["K"] * line.calls for line in lines}
    by_key = {_corpus_key(line): line for line in lines}
    ranked = sorted(load, key=lambda k: -load[k])
    said = [f"{len(ranked)} library GEMM keys in {corpus}, by FLOPs x calls:"]
    for rank, key in enumerate(ranked, 1):
        line = by_key[key]
        us = "" if line.device_us is None else f", {line.device_us / 1e3:.1f} ms on the device"
        said.append(
            f"  {rank:2d}. M={key[0]},N={key[1]},K={key[2]},layout={key[3]}{',bias=1' if key[4] else ''}: "
            f"{load[key] / 1e9:.4g} GFLOP over {line.calls} calls{us}{'  [training group]' if key in group else ''}"
        )
    missing = sorted(group - set(load))
    outside = [load[k] for k in ranked if k not in group]
    inside = [load[k] for k in group if k in load]
    beaten = bool(inside and outside and max(outside) > min(inside))
    for key in missing:
        said.append(f"  the group's M={key[0]},N={key[1]},K={key[2]},layout={key[3]} is not in the corpus")
    if beaten:
        said.append("  a key outside the group has more FLOPs x calls than one inside it")
    ok = bool(group) and not missing and not beaten
    said.append(f"training group {'matches' if ok else 'does NOT match'} the corpus ({len(group)} keys)")
    return ok, said


def fail(prog: str, message: str) -> NoReturn:
    """One line on stderr and exit 2: the suite's scripts' bad-usage ending."""
    print(f"{prog}: {message}", file=sys.stderr)
    raise SystemExit(2)


def _fail(message: str) -> NoReturn:
    fail("payoff_shapes.py", message)


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        fail(self.prog, message)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="payoff_shapes.py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    args_p = sub.add_parser("args")
    args_p.add_argument("file", type=Path)
    args_p.add_argument("--spec", type=Path)
    args_p.add_argument("--part", default="1/1")
    args_p.add_argument("--group", choices=GROUPS)
    check_p = sub.add_parser("check-corpus")
    check_p.add_argument("file", type=Path)
    check_p.add_argument("corpus", type=Path)
    train_p = sub.add_parser("training")
    for name, default in (("hidden", 2048), ("intermediate", 5632), ("heads", 32), ("kv-heads", 4)):
        train_p.add_argument(f"--{name}", type=int, default=default)
    for name, default in (("vocab", 32000), ("tokens", 2048), ("layers", 4)):
        train_p.add_argument(f"--{name}", type=int, default=default)
    opts = parser.parse_args(argv)
    if opts.command == "training":
        ranked = training_gemms(
            opts.hidden, opts.intermediate, opts.heads, opts.kv_heads, opts.vocab, opts.tokens, opts.layers
        )
        for rank, g in enumerate(ranked, 1):
            s = g.shape
            print(
                f"{rank:2d}. M={s['M']},N={s['N']},K={s['K']},layout={s['layout']}  {g.name}: "
                f"{g.flops / 1e9:.4g} GFLOP x {g.calls} = {g.load / 1e9:.4g} GFLOP a step"
            )
        return 0
    for path in (opts.file, getattr(opts, "corpus", None), getattr(opts, "spec", None)):
        if path is not None and not path.exists():
            _fail(f"{path}: no such file")
    try:
        shapes = read_payoff_shapes(opts.file)
        if opts.command == "args":
            chosen = part_of(of_group(shapes, opts.group, opts.file), opts.part)
    except (OSError, ValueError) as exc:
        _fail(str(exc))
    if opts.command == "check-corpus":
        try:
            ok, said = check_corpus(shapes, opts.corpus)
        except (OSError, ValueError) as exc:  # kerntune's CorpusError is a ValueError
            _fail(f"{opts.corpus}: {exc}")
        print("\n".join(said))
        return 0 if ok else 1
    if opts.spec is not None:
        chosen, left = admitted(opts.spec, chosen)
        for text, why in left.items():
            print(f"{opts.spec}: {text} left out (its constraints admit no config: {why})", file=sys.stderr)
    print(" ".join(f"--shape {item.text}" for item in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
