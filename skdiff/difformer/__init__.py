"""DIFFormer estimators: samples (or graph nodes) that diffuse information among each other."""

from .._graph import Graph
from ._estimators import DIFFormerClassifier, DIFFormerRegressor

__all__ = ["DIFFormerClassifier", "DIFFormerRegressor", "Graph"]
