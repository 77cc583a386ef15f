"""skdiff: DIFFormer, Flowformer and Neural Diffusion Processes as scikit-learn estimators."""

from ._base import TrainingDivergedError

__version__ = "0.1.0"

__all__ = [
    "TrainingDivergedError",
    "__version__",
]
