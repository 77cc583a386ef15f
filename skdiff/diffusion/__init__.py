"""Noise schedules, forward process and samplers of Neural Diffusion Processes."""

from .schedule import NoiseSchedule

__all__: list[str] = ["NoiseSchedule"]
