"""Noise schedules, forward process and samplers of Neural Diffusion Processes."""

from .priors import TrainedPrior, available_priors, load_prior, save_prior
from .samplers import (
    conditional_sample,
    ddim_step,
    ddpm_step,
    n_evaluations,
    prior_sample,
    resample_path,
    strided_levels,
)
from .schedule import NoiseSchedule
from .training import PriorConfig, train_prior

__all__: list[str] = [
    "NoiseSchedule",
    "conditional_sample",
    "ddim_step",
    "ddpm_step",
    "n_evaluations",
    "prior_sample",
    "resample_path",
    "strided_levels",
]
__all__ += ["PriorConfig", "TrainedPrior", "available_priors", "load_prior", "save_prior",
            "train_prior"]
