"""Loaders for real data (Planetoid, ETT) and generators of synthetic data."""

__all__: list[str] = []
