"""Real data (Planetoid, ETT: verified downloads and local loaders), a PyTorch Geometric
adapter, and generators of synthetic data."""

from ._download import get_data_home
from ._ett import fetch_ett, load_ett
from ._gp import make_gp_functions
from ._graphs import (
    make_graph_signal,
    make_label_mask,
    make_planted_partition,
    random_split_per_class,
)
from ._planetoid import fetch_planetoid, load_planetoid
from ._pyg import edge_index_to_adjacency, from_pyg
from ._windows import make_windows

__all__ = [
    "edge_index_to_adjacency",
    "fetch_ett",
    "fetch_planetoid",
    "from_pyg",
    "get_data_home",
    "load_ett",
    "load_planetoid",
    "make_gp_functions",
    "make_graph_signal",
    "make_label_mask",
    "make_planted_partition",
    "make_windows",
    "random_split_per_class",
]
