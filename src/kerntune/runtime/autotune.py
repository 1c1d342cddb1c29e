"""``@kerntune.autotune``: the decorator form for Triton users, close to ``triton.autotune``.

It takes the same list of ``triton.Config`` (read by attribute, so this module never imports Triton) and
the same ``kernel[grid](*args)`` call style. It does no timing in the live program: the configs become a
tuning Space (``kernel.space()``, ``kernel.problem(...)``), tuned offline with ``kerntune tune``; at run time
the kernel launches with its selected config — the first config until a tuned one is selected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kerntune.model import Config, Problem, Scalar, Space, TritonKernel

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

    def __init__(self, fn: Any, configs: Sequence[Any], key: Sequence[str]) -> None:
        if not configs:
            raise ValueError("kerntune.autotune needs at least one config")
        self.fn = fn
        self.points = [config_point(c) for c in configs]
        self.key = tuple(key)
        self.select(self.points[0])

    def space(self) -> Space:
        return Space(points=self.points, default=self.points[0])

    def select(self, config: Mapping[str, Scalar]) -> None:
        """Launch with ``config`` from now on (a tuned winner)."""
        self.selected = Config.of(config)
        # Built once here, not per launch: the live call path must not pay for the selection.
        self._launch_kwargs = self.selected.as_dict()

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        fn, chosen = self.fn, self._launch_kwargs

        def launch(*args: Any, **kwargs: Any) -> Any:
            return fn[grid](*args, **kwargs, **chosen)

        return launch

    def problem(self, *, name: str, grid: Callable[[dict[str, Any]], tuple[int, ...]], **fields: Any) -> Problem:
        """A tuning Problem over this kernel's configs; ``grid`` is the same ``lambda META: ...`` used to
        launch it (META holds the shape fields and the config values)."""
        return Problem(name=name, kernel=TritonKernel(self.fn, grid), space=self.space(), **fields)


def autotune(configs: Sequence[Any], key: Sequence[str] = ()) -> Callable[[Any], TunableKernel]:
    """Decorate a ``@triton.jit`` function with candidate configs, as ``triton.autotune`` does."""

    def wrap(fn: Any) -> TunableKernel:
        return TunableKernel(fn, configs, key)

    return wrap
