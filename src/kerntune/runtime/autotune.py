"""``@kerntune.autotune``: the decorator form for Triton users, close to ``triton.autotune``.

It takes the same list of ``triton.Config`` (read by attribute, so this module never imports Triton) and
the same ``kernel[grid](*args)`` call style. It does no timing in the live program: the configs become a
tuning Space (``kernel.space()``, ``kernel.problem(...)``), tuned offline with ``kerntune tune``; at run time
the kernel launches with its selected config — the first config until a tuned one is selected.

Given ``table=`` (what ``kerntune deploy`` wrote) and ``op=`` (the tuned problem's name), each call instead
looks its config up through a ``Dispatcher``: the key is ``op``, the kernel's source hash, the ``dtype`` of the
argument named by ``dtype_arg`` and the values of the ``key`` arguments, plus ``device`` fields; a miss runs
the first config, counted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerntune.model import Config, Problem, Scalar, Space, TritonKernel
from kerntune.runtime.dispatch import Dispatcher

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def config_point(config: Any) -> dict[str, Scalar]:
    """A ``triton.Config`` (or a plain dict) as one point: its kwargs plus the launch options it sets."""
    if isinstance(config, Mapping):
        return dict(config)
    point: dict[str, Scalar] = dict(getattr(config, "kwargs", {}) or {})
    for option in _LAUNCH_OPTIONS:
        value = getattr(config, option, None)
        if value is None or (option == "num_ctas" and value == 1):
            continue
        point[option] = value
    return point


class TunableKernel:
    """A Triton kernel with a list of candidate configs."""

    def __init__(
        self, fn: Any, configs: Sequence[Any], key: Sequence[str], dispatch: DispatchOptions | None = None
    ) -> None:
        if not configs:
            raise ValueError("kerntune.autotune needs at least one config")
        self.fn = fn
        self.points = [config_point(c) for c in configs]
        self.key = tuple(key)
        self.select(self.points[0])
        self.dispatcher: Dispatcher | None = None
        self._dispatched: Any = None
        if dispatch is not None:
            self.dispatcher = dispatch.dispatcher(fn, self.key, self.points[0], self.space())
            self._dispatched = self.dispatcher.kernel(fn)

    def space(self) -> Space:
        return Space(points=self.points, default=self.points[0])

    def select(self, config: Mapping[str, Scalar]) -> None:
        """Launch with ``config`` from now on (a tuned winner)."""
        self.selected = Config.of(config)
        # Built once here, not per launch: the live call path must not pay for the selection.
        self._launch_kwargs = self.selected.as_dict()

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        if self._dispatched is not None:
            return self._dispatched[grid]  # type: ignore[no-any-return]
        fn, chosen = self.fn, self._launch_kwargs

        def launch(*args: Any, **kwargs: Any) -> Any:
            return fn[grid](*args, **kwargs, **chosen)

        return launch

    def problem(self, *, name: str, grid: Callable[[dict[str, Any]], tuple[int, ...]], **fields: Any) -> Problem:
        """A tuning Problem over this kernel's configs; ``grid`` is the same ``lambda META: ...`` used to
        launch it (META holds the shape fields and the config values)."""
        return Problem(name=name, kernel=TritonKernel(self.fn, grid), space=self.space(), **fields)


@dataclass(frozen=True)
class DispatchOptions:
    """Where a decorated kernel reads its configs: a deployed table, the tuned problem's name, the argument
    whose dtype the key carries, the device fields and the dispatcher's mode."""

    table: str | Path
    op: str
    dtype_arg: str | None
    device: Mapping[str, Any] | None
    mode: str

    def dispatcher(self, fn: Any, key: tuple[str, ...], default: Mapping[str, Any], space: Space) -> Dispatcher:
        """The dispatcher of ``fn``'s calls; a table's config that is not one of ``space``'s is never launched."""
        names = list(getattr(fn, "arg_names", None) or [])
        wanted = ((self.dtype_arg,) if self.dtype_arg else ()) + key
        missing = [n for n in wanted if n not in names]
        if missing:
            raise ValueError(
                f"kerntune.autotune: {missing[0]!r} is not an argument of {getattr(fn, '__name__', fn)} "
                f"(its arguments: {', '.join(names) or 'unknown'})"
            )
        at = [names.index(n) for n in key]
        op, dtype_at, dtype_name = self.op, names.index(self.dtype_arg) if self.dtype_arg else None, self.dtype_arg

        def arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], i: int) -> Any:
            return args[i] if i < len(args) else kwargs[names[i]]

        def call_key(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
            values = tuple(arg(args, kwargs, i) for i in at)
            if dtype_at is None:
                return (op, *values)
            return (op, str(arg(args, kwargs, dtype_at).dtype).removeprefix("torch."), *values)

        fields = ("op",) + (("dtype",) if dtype_name else ()) + key
        return Dispatcher(
            self.table,
            key=call_key,
            key_fields=fields,
            default=default,
            device=self.device,
            mode=self.mode,
            space=space,
        )


def autotune(
    configs: Sequence[Any],
    key: Sequence[str] = (),
    *,
    table: str | Path | None = None,
    op: str | None = None,
    dtype_arg: str | None = None,
    device: Mapping[str, Any] | None = None,
    mode: str = "explore",
) -> Callable[[Any], TunableKernel]:
    """Decorate a ``@triton.jit`` function with candidate configs, as ``triton.autotune`` does; with ``table``
    and ``op``, launch each call with the table's config for its key (see the module docstring)."""
    if (table is None) != (op is None):
        raise ValueError("kerntune.autotune: give table= and op= together (op is the tuned problem's name)")
    dispatch = DispatchOptions(table, op, dtype_arg, device, mode) if table is not None and op is not None else None

    def wrap(fn: Any) -> TunableKernel:
        return TunableKernel(fn, configs, key, dispatch)

    return wrap
