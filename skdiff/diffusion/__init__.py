"""Noise schedules, forward process and samplers of Neural Diffusion Processes."""

__all__: list[str] = []
