"""``Space``: named parameters with value lists (or explicit points), constraints, derived values."""

from __future__ import annotations

import functools
import inspect
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kerntune.model.point import Config, Meta, Scalar, Shape
from kerntune.model.target import Target


@functools.lru_cache(maxsize=1024)
def _arity(fn: Callable[..., Any]) -> int:
    # Cached: inspect.signature costs ~40 µs, and a space of 150k configs with 16 constraints calls this 2.4M
    # times (it was most of the tuner's start-up time).
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 3
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 3
    return len(positional)


@dataclass(frozen=True)
class Constraint:
    """A predicate over (config, shape, target). ``fn`` may take 1, 2 or 3 of those, in that order."""

    fn: Callable[..., bool]
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or getattr(self.fn, "__name__", "constraint")

    def holds(self, meta: Meta, shape: Shape | Mapping[str, Scalar], target: Target | None) -> bool:
        args: tuple[Any, ...] = (meta, shape.as_dict() if isinstance(shape, Shape) else shape, target)
        return bool(self.fn(*args[: max(1, _arity(self.fn))]))


Derived = Callable[[Meta], Scalar]


@dataclass(frozen=True)
class Space:
    """Named parameters with value lists (a product), or explicit points; constraints; derived values.

    - ``params``: name → candidate values; the space is their Cartesian product.
    - ``points``: an explicit list of configs instead of a product (e.g. a list of ``triton.Config``).
    - ``constraints``: predicates over (config, shape, target); a config failing one is rejected with the
      constraint's name as the reason. A constraint sees derived values too.
    - ``derived``: name → fn(meta) computed from config and shape values (not part of the config's identity).
    - ``default``: the conservative config a user would run without tuning (first values when absent).
    - ``seeds``: known good configs (a library's, or the ones a ``triton.autotune`` list carried), tried
      first where valid; values they leave out come from ``default``.
    """

    params: Mapping[str, Sequence[Scalar]] = field(default_factory=dict)
    constraints: Sequence[Constraint | Callable[..., bool]] = ()
    derived: Mapping[str, Derived] = field(default_factory=dict)
    default: Mapping[str, Scalar] | None = None
    points: Sequence[Mapping[str, Scalar]] | None = None
    seeds: Sequence[Mapping[str, Scalar]] = ()

    def __post_init__(self) -> None:
        from kerntune.errors import SpecError

        if self.points is None and not self.params:
            raise SpecError("the space is empty: give Space(params={...}) at least one parameter with values")
        if self.points is not None and len(self.points) == 0:
            raise SpecError("the space is empty: Space(points=[...]) lists no config")
        for name, values in self.params.items():
            if isinstance(values, (str, bytes)) or len(list(values)) == 0:
                raise SpecError(f"parameter {name!r} has no values: give it a non-empty list")

    @property
    def size(self) -> int:
        if self.points is not None:
            return len(self.points)
        return math.prod(len(list(v)) for v in self.params.values())

    def all_configs(self) -> Iterator[Config]:
        """Every point, in a stable order (product order, or the listed points)."""
        if self.points is not None:
            for point in self.points:
                yield Config.of(point)
            return
        names = list(self.params)
        for values in itertools.product(*(list(self.params[n]) for n in names)):
            yield Config.of(dict(zip(names, values, strict=False)))

    def default_config(self) -> Config:
        if self.default is not None:
            return Config.of(self.default)
        return next(self.all_configs())

    def seed_configs(self) -> list[Config]:
        """``seeds`` completed from the default config, in the order given."""
        default = self.default_config().as_dict()
        return [Config.of({**default, **seed}) for seed in self.seeds]

    def _constraints(self) -> list[Constraint]:
        return [c if isinstance(c, Constraint) else Constraint(c) for c in self.constraints]

    def meta(self, config: Config, shape: Shape) -> Meta:
        """Shape fields, then config values, then derived values: what kernels and grids see."""
        meta: Meta = {**shape.as_dict(), **config.as_dict()}
        for name, fn in self.derived.items():
            meta[name] = fn(meta)
        return meta

    def tunables(self, config: Config, shape: Shape) -> Meta:
        """Config values and derived values: what is compiled into a candidate (defines, constexprs)."""
        meta = self.meta(config, shape)
        return {k: meta[k] for k in (*config.names(), *self.derived)}

    def check(self, config: Config, shape: Shape, target: Target | None, *, target_unknown: bool = False) -> str | None:
        """None when the config is valid for this shape and target, else the rejecting constraint's name. With
        ``target_unknown`` (a parent process that has not met the device yet), constraints that read the target
        are not judged: the caller checks them again once a worker names its Target."""
        meta = self.meta(config, shape)
        for constraint in self._constraints():
            if target_unknown and _arity(constraint.fn) >= 3:
                continue
            if not constraint.holds(meta, shape, target):
                return constraint.label
        return None

    def valid_configs(self, shape: Shape, target: Target | None) -> tuple[list[Config], dict[str, int]]:
        """The configs that pass every constraint (in product order), and how many configs each constraint ruled
        out. A product space is walked parameter by parameter: a constraint that a prefix of the parameters
        already decides (it reads only those) rules out or passes every completion at once, so a space of 150k
        configs costs about as much as its valid part (the tuner's start-up computes this for every shape). The
        first constraint, in declared order, that a prefix decides against is the one credited."""
        if self.points is not None:
            return self._valid_points(shape, target)
        names = list(self.params)
        choices = [list(self.params[n]) for n in names]
        below = [math.prod(len(c) for c in choices[i:]) for i in range(len(choices) + 1)]  # completions per depth
        checks = [(c.label, c.fn, max(1, _arity(c.fn))) for c in self._constraints()]
        fields, valid, rejected = shape.as_dict(), [], {}  # type: ignore[var-annotated]

        def visit(depth: int, assigned: dict[str, Scalar], pending: list[int]) -> None:
            unset = frozenset(names[depth:])
            meta = self._partial_meta(fields, assigned, unset)
            undecided = []
            for i in pending:
                label, fn, arity = checks[i]
                try:
                    ok = bool(fn(*(meta, fields, target)[:arity]))
                except _Unassigned:
                    undecided.append(i)
                    continue
                if not ok:
                    rejected[label] = rejected.get(label, 0) + below[depth]
                    return
            if depth == len(names):
                valid.append(Config(tuple(assigned.items())))
                return
            for value in choices[depth]:
                visit(depth + 1, {**assigned, names[depth]: value}, undecided)

        visit(0, {}, list(range(len(checks))))
        return valid, rejected

    def _partial_meta(
        self, fields: Mapping[str, Scalar], assigned: Mapping[str, Scalar], unset: frozenset[str]
    ) -> Meta:
        """``meta`` of a prefix of the parameters: reading one still unset raises ``_Unassigned`` (so does a
        derived value that needs one); with every parameter set, a plain dict."""
        meta: Meta = {**fields, **assigned} if not unset else _PartialMeta({**fields, **assigned}, unset)
        for name, fn in self.derived.items():
            try:
                meta[name] = fn(meta)
            except _Unassigned:
                if isinstance(meta, _PartialMeta):
                    meta.unset = meta.unset | {name}
        return meta

    def _valid_points(self, shape: Shape, target: Target | None) -> tuple[list[Config], dict[str, int]]:
        valid: list[Config] = []
        rejected: dict[str, int] = {}
        constraints, fields = self._constraints(), shape.as_dict()
        for config in self.all_configs():
            meta = self.meta(config, shape)
            reason = next((c.label for c in constraints if not c.holds(meta, fields, target)), None)
            if reason is None:
                valid.append(config)
            else:
                rejected[reason] = rejected.get(reason, 0) + 1
        return valid, rejected


class _Unassigned(BaseException):
    """A constraint read a parameter that the prefix being checked has not set yet: the prefix does not decide it.
    A BaseException, so a constraint's own ``except Exception`` cannot swallow it and decide wrongly."""


class _PartialMeta(dict):  # type: ignore[type-arg]
    """The meta of a prefix of a product space's parameters. Reading an unset parameter — by index, ``get``, ``in``
    — or the whole mapping (iteration, ``len``, ``keys``, copies) raises ``_Unassigned``."""

    def __init__(self, data: Mapping[str, Any], unset: frozenset[str]) -> None:
        super().__init__(data)
        self.unset = unset

    def __getitem__(self, key: str) -> Any:
        if key in self.unset:
            raise _Unassigned(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.unset:
            raise _Unassigned(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if key in self.unset:
            raise _Unassigned(key)
        return super().__contains__(key)

    def _whole(self, *args: Any, **kwargs: Any) -> Any:
        raise _Unassigned("the whole mapping")

    __iter__ = __len__ = keys = values = items = copy = __eq__ = __ne__ = __or__ = __ror__ = __reduce__ = _whole
