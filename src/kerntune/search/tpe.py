"""Model-based search with Optuna's TPE sampler (seeded: the same results give the same proposals); each
parameter is a categorical over the values valid configs take."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, cast

from kerntune.model import Config, Scalar
from kerntune.search.optuna_base import OptunaSearch

if TYPE_CHECKING:
    import optuna


class TPESearch(OptunaSearch):
    name = "tpe"

    def sampler(self, seed: int, size: int) -> optuna.samplers.BaseSampler:
        # constant_liar: trials asked ahead and not yet told count as bad guesses, so proposals asked while
        # the compile workers run ahead spread out instead of repeating one region (experimental in older
        # Optuna releases, which warn about it).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", self._optuna.exceptions.ExperimentalWarning)
            sampler: optuna.samplers.BaseSampler = self._optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=min(10, size), constant_liar=True
            )
        return sampler

    def suggest(self, trial: optuna.trial.Trial) -> dict[str, Scalar]:
        return {n: cast(Scalar, trial.suggest_categorical(n, values)) for n, values in self.choices.items()}

    def encode(self, config: Config) -> dict[str, object]:
        return {n: config[n] for n in self.choices}
