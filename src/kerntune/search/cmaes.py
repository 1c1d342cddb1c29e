"""CMA-ES through Optuna's CmaEsSampler (needs the ``cmaes`` package). Each parameter becomes an integer axis
over its sorted values (tile sizes, warps and stages are ordinal: 64 lies between 32 and 128), and a proposal
that falls on an invalid or already-timed point is moved to the nearest valid unevaluated config (the smallest
sum of index distances), so the search walks the valid space rather than wasting trials on its holes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kerntune.model import Config, Scalar
from kerntune.search.optuna_base import OptunaSearch

if TYPE_CHECKING:
    import optuna


class CMAESSearch(OptunaSearch):
    name = "cmaes"

    def sampler(self, seed: int, size: int) -> optuna.samplers.BaseSampler:
        sampler: optuna.samplers.BaseSampler = self._optuna.samplers.CmaEsSampler(
            seed=seed, n_startup_trials=min(10, size), warn_independent_sampling=False
        )
        return sampler

    def suggest(self, trial: optuna.trial.Trial) -> dict[str, Scalar]:
        return {n: values[trial.suggest_int(n, 0, len(values) - 1)] for n, values in self.choices.items()}

    def encode(self, config: Config) -> dict[str, int]:
        return {n: self.choices[n].index(config[n]) for n in self.choices}

    def snap(self, params: dict[str, Scalar]) -> Config | None:
        exact = super().snap(params)
        if exact is not None:
            return exact
        want = {n: self.choices[n].index(params[n]) for n in self.choices}
        open_configs = [c for k, c in self._valid.items() if k not in self._trials]
        if not open_configs:
            return None
        return min(open_configs, key=lambda c: sum(abs(self.encode(c)[n] - want[n]) for n in self.choices))
