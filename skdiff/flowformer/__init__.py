"""Flowformer estimators: sequence regression, forecasting and classification."""

from ._estimators import FlowformerClassifier, FlowformerRegressor

__all__ = ["FlowformerClassifier", "FlowformerRegressor"]
