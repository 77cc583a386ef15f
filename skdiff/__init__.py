"""skdiff: DIFFormer, Flowformer and Neural Diffusion Processes as scikit-learn estimators."""

from ._base import TrainingDivergedError
from ._difformer import DIFFormerClassifier, Graph
from ._flowformer import FlowformerClassifier, FlowformerRegressor
from ._ndp import NDPRegressor, log_likelihood_scorer

__version__ = "0.1.0"

__all__ = [
    "FlowformerClassifier",
    "FlowformerRegressor",
    "DIFFormerClassifier",
    "Graph",
    "NDPRegressor",
    "TrainingDivergedError",
    "log_likelihood_scorer",
    "__version__",
]
