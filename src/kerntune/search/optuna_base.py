"""What the Optuna-backed strategies share: a seeded study over the parameters that vary among the valid
configs, proposals mapped back onto valid configs, and results told back (failures as failed trials).

A proposal outside the valid set (a constraint excludes it) or already evaluated is told to Optuna as pruned
and another is asked; after ``MAX_REDRAWS`` such proposals in a row, the next unevaluated valid config in a
seeded order is enqueued, so every strategy ends when the space is exhausted. Proposals may be asked ahead of
results (the tuner compiles ahead): Optuna treats the unfinished trials as running.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kerntune.model import Config, Scalar
from kerntune.search.base import Strategy
from kerntune.search.neighbourhood import parameter_names

if TYPE_CHECKING:
    import optuna

MAX_REDRAWS = 50


class OptunaSearch(Strategy):
    def __init__(
        self, configs: Sequence[Config], seed: int, start: Config | None = None, first: Sequence[Config] = ()
    ) -> None:
        super().__init__(configs, seed, start, first)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._valid = {c.key: c for c in self.configs}
        varying = parameter_names(self.configs)
        self._all_names = [k for k, _ in self.configs[0].items] if self.configs else []
        self._fixed = {k: v for k, v in (self.configs[0].items if self.configs else ()) if k not in varying}
        self.choices = {n: sorted({c[n] for c in self.configs}, key=_order) for n in varying}
        self._study = optuna.create_study(sampler=self.sampler(seed, len(self.configs)))
        self._trials: dict[str, optuna.trial.Trial] = {}
        self._fallback = list(self.configs)
        random.Random(seed).shuffle(self._fallback)
        if self.start is not None and self.start.key in self._valid:
            self._study.enqueue_trial(dict(self.encode(self.start)))

    @abstractmethod
    def sampler(self, seed: int, size: int) -> optuna.samplers.BaseSampler:
        """The seeded Optuna sampler."""

    @abstractmethod
    def suggest(self, trial: optuna.trial.Trial) -> dict[str, Scalar]:
        """Parameter values (of the varying parameters) for one trial."""

    @abstractmethod
    def encode(self, config: Config) -> Mapping[str, object]:
        """A config as the trial parameters ``suggest`` would produce for it (for enqueued trials)."""

    def snap(self, params: dict[str, Scalar]) -> Config | None:
        """The valid, unevaluated config a proposal stands for, or None (told as pruned, asked again)."""
        key = Config.of({n: params[n] for n in self._all_names}).key  # the space's parameter order
        return self._valid[key] if key in self._valid and key not in self._trials else None

    def ask(self) -> Config | None:
        if len(self._trials) >= len(self._valid):
            return None
        for _ in range(MAX_REDRAWS):
            trial = self._study.ask()
            config = self.snap({**self._fixed, **self.suggest(trial)})
            if config is not None:
                self._trials[config.key] = trial
                return config
            self._study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)
        for config in self._fallback:
            if config.key not in self._trials:
                self._study.enqueue_trial(dict(self.encode(config)))
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


def _order(value: Scalar) -> tuple[int, float | str]:
    # Numbers in numeric order (an ordinal axis for CMA-ES), anything else after them by its text.
    return (0, value) if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, repr(value))
