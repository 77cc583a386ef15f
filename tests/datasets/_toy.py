"""Small synthetic files in the Planetoid and ETT formats, for tests that need no real data."""

import pickle

import numpy as np
import scipy.sparse as sp

from ..conftest import PLANETOID_PARTS  # noqa: F401  (re-exported)


def toy_planetoid(test_ids=(9, 6, 8), n_nodes=10, n_allx=6, n_train=3, n_features=5,
                  n_classes=3, seed=0):
    """The pickled parts of a small Planetoid-format graph (a ring over ``n_nodes`` nodes).

    Test ids skip node 7, like Citeseer's isolated test nodes; row k of tx/ty is node
    ``test_ids[k]``.
    """
    rng = np.random.default_rng(seed)
    allx = sp.csr_matrix(rng.integers(0, 2, (n_allx, n_features)).astype(np.float32))
    ally = np.eye(n_classes, dtype=np.int32)[rng.integers(0, n_classes, n_allx)]
    n_test = len(test_ids)
    tx = sp.csr_matrix(np.arange(n_test * n_features, dtype=np.float32)
                       .reshape(n_test, n_features) + 1)
    ty = np.eye(n_classes, dtype=np.int32)[np.arange(n_test) % n_classes]
    graph = {i: [(i + 1) % n_nodes, (i - 1) % n_nodes] for i in range(n_nodes)}
    return dict(x=allx[:n_train], y=ally[:n_train], tx=tx, ty=ty, allx=allx, ally=ally,
                graph=graph), list(test_ids)


def write_planetoid(folder, parts=None, test_ids=None, name="cora", protocol=2):
    """Write a Planetoid file set (default: :func:`toy_planetoid`) into ``folder``."""
    if parts is None:
        parts, test_ids = toy_planetoid()
    folder.mkdir(parents=True, exist_ok=True)
    for part, obj in parts.items():
        (folder / f"ind.{name}.{part}").write_bytes(pickle.dumps(obj, protocol=protocol))
    (folder / f"ind.{name}.test.index").write_text("\n".join(map(str, test_ids)) + "\n")
    return folder


TOY_ETT = (
    "date,HUFL,HULL,MUFL,MULL,LUFL,LULL,OT\n"
    "2016-07-01 00:00:00,5.827,2.009,1.599,0.462,4.203,1.340,30.531\n"
    "2016-07-01 01:00:00,5.693,2.076,1.492,0.426,4.142,1.371,27.787\n"
    "2016-07-01 02:00:00,5.157,1.741,1.279,0.355,3.777,1.218,27.787\n"
    "2016-07-01 03:00:00,5.090,1.942,1.279,0.391,3.807,1.279,25.044\n"
)


def write_ett(path, text=TOY_ETT):
    """Write an ETT-format CSV (default: four rows of the published ETTh1) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path
