"""Ray Tune's schedulers for a study's ablations (``scheduler:`` in a study file): ASHA, and an
asynchronous PBT that pauses no member where the population fits its slots."""

from __future__ import annotations

from typing import Any

from ray import tune
from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining, TrialScheduler


def scheduler(spec: dict[str, Any] | None, max_t: int, fits: bool = False) -> Any:
    """Tune's scheduler for an ablation's ``scheduler`` spec; ``fits``: every trial has a slot of its
    own (the experiment's trials <= the study's CPUs)."""
    if spec is None:
        return None
    metric, mode = spec["metric"], spec["mode"]
    if spec["name"] == "asha":
        grace, factor = spec.get("grace_period", 1), spec.get("reduction_factor", 2)
        return ASHAScheduler(metric=metric, mode=mode, max_t=max_t, grace_period=grace, reduction_factor=factor)
    mutations = {k: tune.loguniform(lo, hi) for k, (lo, hi) in spec["mutations"].items()}
    interval = spec.get("perturbation_interval", 2)
    # Asynchronous: a member due for a perturbation is compared with the others' latest results. (The
    # synchronous variant pauses members at a barrier; with a population larger than the CPUs, a member
    # resumed at the barrier re-reports its evaluation there and is paused again, without end.)
    return _AsynchronousPBT(
        fits,
        time_attr="training_iteration",
        metric=metric,
        mode=mode,
        perturbation_interval=interval,
        hyperparam_mutations=mutations,
        quantile_fraction=0.25,
    )


class _AsynchronousPBT(PopulationBasedTraining):
    """Ray's asynchronous PBT, without pauses that buy nothing: at a perturbation point it pauses a
    member while any other waits (pending, or paused to copy a better one's checkpoint), to let the
    waiting one run. Where every member has a slot of its own (``fits``) the waiting one starts
    anyway, and a pause would only cost the paused member a fresh process and its imports."""

    def __init__(self, fits: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fits = fits

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)
        return TrialScheduler.CONTINUE if self.fits and decision == TrialScheduler.PAUSE else decision
