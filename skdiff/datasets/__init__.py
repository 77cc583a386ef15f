"""Loaders for real data (Planetoid, ETT) and generators of synthetic data."""

from ._gp import make_gp_functions
from ._graphs import make_label_mask, make_planted_partition, random_split_per_class
from ._planetoid import get_data_home, load_planetoid

__all__ = [
    "get_data_home",
    "load_planetoid",
    "make_gp_functions",
    "make_label_mask",
    "make_planted_partition",
    "random_split_per_class",
]
