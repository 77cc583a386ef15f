"""skdiff: DIFFormer, Flowformer and Neural Diffusion Processes as scikit-learn estimators."""

from ._engine import TrainingDivergedError
from ._graph import Graph
from ._posterior import sample_posterior
from .difformer import DIFFormerClassifier, DIFFormerRegressor
from .flowformer import FlowformerClassifier, FlowformerRegressor
from .ndp import NDPRegressor, log_likelihood_scorer

__version__ = "0.1.0"

__all__ = [
    "DIFFormerClassifier",
    "DIFFormerRegressor",
    "FlowformerClassifier",
    "FlowformerRegressor",
    "Graph",
    "NDPRegressor",
    "TrainingDivergedError",
    "log_likelihood_scorer",
    "sample_posterior",
    "__version__",
]
