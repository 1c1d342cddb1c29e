"""Which tunable parameters moved the time: Optuna's PED-ANOVA importance over a shape's timed configs.

PED-ANOVA (Watanabe et al., 2023) scores each parameter by how differently its values are spread among the best
configs (the top 10% by median) than among all of them: a parameter whose best configs share one value matters, one
whose values are spread alike does not. Scores are normalized to sum to 1. It needs no model fit and no
scikit-learn (fANOVA does), and it reads categorical values as they are (a tile size is a choice, not a number on a
scale). Below ``MIN_CONFIGS`` timed configs, or with fewer than two parameters that vary, there is no score: a
handful of points ranks nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from kerntune.model import Scalar

MIN_CONFIGS = 10


def varying(rows: Sequence[tuple[Mapping[str, Scalar], float]]) -> dict[str, list[Scalar]]:
    """Each parameter that takes two or more values among the rows, with its values in a stable order."""
    values: dict[str, list[Scalar]] = {}
    for config, _ in rows:
        for name, value in config.items():
            seen = values.setdefault(name, [])
            if value not in seen:
                seen.append(value)
    return {name: sorted(v, key=lambda x: (str(type(x)), x)) for name, v in values.items() if len(v) >= 2}


def parameter_importance(rows: Sequence[tuple[Mapping[str, Scalar], float]]) -> dict[str, float] | None:
    """(config, median ms) per timed config → parameter name → importance (summing to 1), most important first;
    None when there are too few configs or varying parameters to say."""
    params = varying(rows)
    if len(rows) < MIN_CONFIGS or len(params) < 2:
        return None
    import optuna
    from optuna.distributions import CategoricalDistribution
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    distributions = {name: CategoricalDistribution(values) for name, values in params.items()}
    trials = [
        optuna.trial.create_trial(
            params={n: c[n] for n in params if n in c},
            distributions={n: d for n, d in distributions.items() if n in c},
            value=ms,
        )
        for c, ms in rows
    ]
    with warnings.catch_warnings():  # PED-ANOVA is marked experimental in some Optuna releases
        warnings.simplefilter("ignore")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(direction="minimize")
        study.add_trials(trials)
        try:
            found = get_param_importances(study, evaluator=PedAnovaImportanceEvaluator(), normalize=True)
        except (ValueError, RuntimeError, ZeroDivisionError):  # degenerate data (every time equal, say)
            return None
    return {name: float(score) for name, score in found.items()}
