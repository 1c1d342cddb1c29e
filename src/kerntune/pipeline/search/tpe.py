"""Model-based search with Optuna's TPE sampler (seeded: the same results give the same proposals).

Each parameter is a categorical over the values valid configs take. A proposal outside the valid set (a
constraint excludes it) or already evaluated is told to Optuna as pruned and another is asked; after
``MAX_REDRAWS`` such proposals in a row, the next unevaluated valid config in a seeded order is enqueued, so
the strategy always ends when the space is exhausted."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, cast

from kerntune.model import Config, Scalar
from kerntune.pipeline.search.base import Strategy
from kerntune.pipeline.search.neighbourhood import parameter_names

MAX_REDRAWS = 50


class TPESearch(Strategy):
    name = "tpe"

    def __init__(self, configs: Sequence[Config], seed: int, start: Config | None = None) -> None:
        super().__init__(configs, seed, start)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._valid = {c.key: c for c in self.configs}
        varying = parameter_names(self.configs)
        self._all_names = [k for k, _ in self.configs[0].items] if self.configs else []
        self._fixed = {k: v for k, v in (self.configs[0].items if self.configs else ()) if k not in varying}
        self._choices = {n: sorted({c[n] for c in self.configs}, key=repr) for n in varying}
        self._study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed,
                                                                              n_startup_trials=min(10, len(configs))))
        self._trials: dict[str, Any] = {}
        self._fallback = list(self.configs)
        random.Random(seed).shuffle(self._fallback)
        if self.start is not None and self.start.key in self._valid:
            self._study.enqueue_trial({n: self.start[n] for n in self._choices})

    def ask(self) -> Config | None:
        if len(self._trials) >= len(self._valid):
            return None
        for _ in range(MAX_REDRAWS):
            trial = self._study.ask()
            params: dict[str, Scalar] = dict(self._fixed)
            for n, values in self._choices.items():
                params[n] = cast(Scalar, trial.suggest_categorical(n, values))
            key = Config.of({n: params[n] for n in self._all_names}).key  # the space's parameter order
            if key in self._valid and key not in self._trials:
                self._trials[key] = trial
                return self._valid[key]
            self._study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)
        for config in self._fallback:
            if config.key not in self._trials:
                self._study.enqueue_trial({n: config[n] for n in self._choices})
                return self.ask()
        return None

    def tell(self, config: Config, median_ms: float | None) -> None:
        trial = self._trials.get(config.key)
        if trial is None:
            return
        if median_ms is None:
            self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self._study.tell(trial, median_ms)
