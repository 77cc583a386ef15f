"""Noise schedules, forward process and samplers of Neural Diffusion Processes."""

from .samplers import (
    conditional_sample,
    ddim_step,
    ddpm_step,
    prior_sample,
    strided_levels,
)
from .schedule import NoiseSchedule

__all__: list[str] = [
    "NoiseSchedule",
    "conditional_sample",
    "ddim_step",
    "ddpm_step",
    "prior_sample",
    "strided_levels",
]
