"""Planetoid citation graphs (Cora, Citeseer, Pubmed) from their original raw files."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

__all__ = ["load_planetoid", "get_data_home"]

_NAMES = ("cora", "citeseer", "pubmed")
_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
_URL = "https://github.com/kimiyoung/planetoid/raw/master/data/ind.{name}.{part}"


def get_data_home(data_home=None) -> Path:
    """The folder skdiff reads data sets from.

    ``data_home`` if given, else the ``SKDIFF_DATA`` environment variable, else
    ``~/skdiff_data``.
    """
    if data_home is None:
        data_home = os.environ.get("SKDIFF_DATA", Path.home() / "skdiff_data")
    return Path(data_home).expanduser()


class _ArrayOnlyUnpickler(pickle.Unpickler):
    """Unpickler that admits only the numpy/scipy classes the Planetoid files are made of.

    The raw files are Python 2 pickles; a pickle can name any importable callable, so loading an
    untrusted file with :func:`pickle.load` can run arbitrary code. Everything not on this list
    is refused with :class:`pickle.UnpicklingError`.
    """

    _ALLOWED = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("numpy.core.multiarray", "_reconstruct"): np._core.multiarray._reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): np._core.multiarray._reconstruct,
        ("numpy.core.multiarray", "scalar"): np._core.multiarray.scalar,
        ("numpy._core.multiarray", "scalar"): np._core.multiarray.scalar,
        ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
        ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
        ("scipy.sparse.csc", "csc_matrix"): sp.csc_matrix,
        ("scipy.sparse._csc", "csc_matrix"): sp.csc_matrix,
        ("scipy.sparse.coo", "coo_matrix"): sp.coo_matrix,
        ("scipy.sparse._coo", "coo_matrix"): sp.coo_matrix,
        ("scipy.sparse.lil", "lil_matrix"): sp.lil_matrix,
        ("scipy.sparse._lil", "lil_matrix"): sp.lil_matrix,
        ("collections", "defaultdict"): __import__("collections").defaultdict,
        ("builtins", "list"): list,
        ("__builtin__", "list"): list,
        ("copy_reg", "_reconstructor"): __import__("copyreg")._reconstructor,
        ("copyreg", "_reconstructor"): __import__("copyreg")._reconstructor,
        ("builtins", "object"): object,
        ("_codecs", "encode"): __import__("codecs").encode,  # bytes in protocol-2 pickles
        ("__builtin__", "object"): object,
    }

    def find_class(self, module, name):
        try:
            return self._ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"Refusing to load '{module}.{name}' from a Planetoid file: only numpy/scipy "
                "array classes are allowed. The file is not an original Planetoid file."
            ) from None


def _load_part(path: Path):
    with open(path, "rb") as f:
        return _ArrayOnlyUnpickler(f, encoding="latin1").load()


def _fetch(folder: Path, name: str, download: bool):
    missing = [p for p in (*_PARTS, "test.index") if not (folder / f"ind.{name}.{p}").exists()]
    if not missing:
        return
    if not download:
        raise FileNotFoundError(
            f"Planetoid '{name}' files are missing from {folder} ({', '.join(missing)}). Pass "
            "data_home=<folder containing planetoid/ind.{name}.*>, or download=True to fetch "
            "them from github.com/kimiyoung/planetoid."
        )
    from urllib.request import urlretrieve  # pragma: no cover - needs a network

    folder.mkdir(parents=True, exist_ok=True)  # pragma: no cover
    for part in missing:  # pragma: no cover
        urlretrieve(_URL.format(name=name, part=part), folder / f"ind.{name}.{part}")


def load_planetoid(name="cora", data_home=None, *, download=False):
    """Load a Planetoid citation graph (Yang et al., 2016) with its public split.

    Reads the original raw files ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}`` from
    ``data_home/planetoid/`` (or ``data_home`` itself). The pickles are read with a restricted
    unpickler that only admits numpy/scipy array classes.

    The test rows are stored out of order in the raw files and are put back at the node ids
    listed in ``ind.<name>.test.index``. Where test ids are missing from ``tx`` (isolated
    Citeseer nodes), zero feature rows are padded in, as in the reference loaders; those nodes
    get the label ``-1`` and belong to no split.

    Parameters
    ----------
    name : {"cora", "citeseer", "pubmed"}, default="cora"
        Which graph.
    data_home : str or path-like, default=None
        Folder holding ``planetoid/ind.<name>.*`` (see :func:`get_data_home`).
    download : bool, default=False
        Fetch missing files from github.com/kimiyoung/planetoid (needs a network).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (n_nodes, n_features) CSR float32 features; ``target`` (n_nodes,) int64
        labels (-1 for padded nodes); ``adjacency`` (n_nodes, n_nodes) symmetric CSR float32,
        no self loops; ``train_idx`` (the first 20 per class), ``val_idx`` (500), ``test_idx``
        (1000): the public split; ``feature_names``; ``target_names``; ``DESCR``.

    Examples
    --------
    >>> from skdiff.datasets import load_planetoid
    >>> cora = load_planetoid("cora", data_home=DATA_HOME)
    >>> cora.data.shape, cora.adjacency.nnz // 2, len(cora.train_idx)
    ((2708, 1433), 5278, 140)
    """
    if name not in _NAMES:
        raise ValueError(f"The 'name' parameter must be one of {_NAMES}; got {name!r}.")
    home = get_data_home(data_home)
    folder = home / "planetoid" if (home / "planetoid").is_dir() else home
    _fetch(folder, name, download)

    x, y, tx, ty, allx, ally, graph = (
        _load_part(folder / f"ind.{name}.{part}") for part in _PARTS
    )
    test_ids = np.loadtxt(folder / f"ind.{name}.test.index", dtype=np.int64).reshape(-1)
    test_sorted = np.sort(test_ids)

    # Pad the test block so that it covers every id from min to max (Citeseer has isolated
    # test nodes that are missing from tx/ty).
    span = test_sorted[-1] - test_sorted[0] + 1
    tx_full = sp.lil_matrix((span, tx.shape[1]), dtype=np.float32)
    tx_full[test_sorted - test_sorted[0], :] = tx
    ty_full = np.zeros((span, ty.shape[1]), dtype=ty.dtype)
    ty_full[test_sorted - test_sorted[0], :] = ty

    features = sp.vstack([sp.csr_matrix(allx), tx_full.tocsr()]).tocsr()
    labels_1h = np.vstack([ally, ty_full])
    # Rows of the test block are stored in sorted order of their ids; the raw file order is
    # test_ids. Move row test_sorted[i] to node id test_ids[i] (Kipf & Welling's loader).
    order = np.arange(features.shape[0])
    order[test_ids] = test_sorted
    features = features[order].astype(np.float32)
    labels_1h = labels_1h[order]

    target = labels_1h.argmax(axis=1).astype(np.int64)
    target[labels_1h.sum(axis=1) == 0] = -1

    n = features.shape[0]
    rows = np.repeat(np.fromiter(graph.keys(), dtype=np.int64),
                     [len(v) for v in graph.values()])
    cols = np.fromiter((c for v in graph.values() for c in v), dtype=np.int64, count=rows.size)
    n = max(n, int(rows.max()) + 1, int(cols.max()) + 1)
    A = sp.coo_matrix((np.ones(rows.size, dtype=np.float32), (rows, cols)), shape=(n, n)).tocsr()
    A = A.maximum(A.T).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    A.data[:] = 1.0

    n_train = y.shape[0]
    return Bunch(
        data=features,
        target=target,
        adjacency=A.astype(np.float32),
        train_idx=np.arange(n_train),
        val_idx=np.arange(n_train, n_train + 500),
        test_idx=test_sorted,
        feature_names=np.array([f"word_{i}" for i in range(features.shape[1])], dtype=object),
        target_names=np.array([f"class_{i}" for i in range(labels_1h.shape[1])], dtype=object),
        DESCR=(
            f"Planetoid {name}: {n} nodes, {features.shape[1]} features, "
            f"{labels_1h.shape[1]} classes, {A.nnz // 2} undirected edges. Public split: "
            f"{n_train} train, 500 validation, {test_sorted.size} test nodes."
        ),
    )
