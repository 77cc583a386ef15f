"""Planetoid citation graphs (Cora, Citeseer, Pubmed) from their original raw files."""

from __future__ import annotations

import collections
import copyreg
import io
import pickle

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from .._checks import memory_for
from ._download import check_verify, ensure_files, get_data_home, read_verified

__all__ = ["fetch_planetoid", "load_planetoid"]

_NAMES = ("cora", "citeseer", "pubmed")
_PICKLED = ("x", "y", "tx", "ty", "allx", "ally", "graph")
_PARTS = (*_PICKLED, "test.index")
_URL = "https://github.com/kimiyoung/planetoid/raw/master/data"


class _RefusedClass(pickle.UnpicklingError):
    """A pickle names a class outside the allow-list."""


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
        # protocol-5 pickles of arrays (files written by current Python) rebuild from a buffer
        ("numpy.core.numeric", "_frombuffer"): np._core.numeric._frombuffer,
        ("numpy._core.numeric", "_frombuffer"): np._core.numeric._frombuffer,
        ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
        ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
        ("scipy.sparse.csc", "csc_matrix"): sp.csc_matrix,
        ("scipy.sparse._csc", "csc_matrix"): sp.csc_matrix,
        ("scipy.sparse.coo", "coo_matrix"): sp.coo_matrix,
        ("scipy.sparse._coo", "coo_matrix"): sp.coo_matrix,
        ("scipy.sparse.lil", "lil_matrix"): sp.lil_matrix,
        ("scipy.sparse._lil", "lil_matrix"): sp.lil_matrix,
        ("collections", "defaultdict"): collections.defaultdict,
        ("builtins", "list"): list,
        ("__builtin__", "list"): list,
        ("copy_reg", "_reconstructor"): copyreg._reconstructor,
        ("copyreg", "_reconstructor"): copyreg._reconstructor,
        ("builtins", "object"): object,
        ("_codecs", "encode"): __import__("codecs").encode,  # bytes in protocol-2 pickles
        ("__builtin__", "object"): object,
    }

    def __init__(self, file, *, source):
        super().__init__(file, encoding="latin1")
        self._source = source

    def find_class(self, module, name):
        try:
            return self._ALLOWED[(module, name)]
        except KeyError:
            raise _RefusedClass(
                f"Refusing to load '{module}.{name}' from {self._source}: only numpy/scipy "
                "array classes are allowed. The file is not an original Planetoid file."
            ) from None


def _folder(home):
    """``home/planetoid``, or ``home`` itself when it has no such folder."""
    return home / "planetoid" if (home / "planetoid").is_dir() else home


def _unpickle(data: bytes, path, fetch_call):
    try:
        return _ArrayOnlyUnpickler(io.BytesIO(data), source=path).load()
    except _RefusedClass:
        raise
    except Exception as exc:  # a damaged pickle can fail in any opcode or constructor
        raise pickle.UnpicklingError(
            f"{path} is not a readable Planetoid pickle ({type(exc).__name__}: {exc}): the file "
            f"is truncated or corrupt. Delete it and run {fetch_call} to download it again."
        ) from exc


def _features(obj, path):
    """A pickled feature block as a finite float32 CSR matrix."""
    if not (sp.issparse(obj) or isinstance(obj, np.ndarray)) or obj.ndim != 2:
        raise ValueError(f"{path} must hold a 2-D (sparse) feature matrix; got {type(obj)}.")
    try:
        X = sp.csr_matrix(obj, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path} must hold a numeric feature matrix ({exc}).") from exc
    if not np.isfinite(X.data).all():
        raise ValueError(f"{path} holds non-finite feature values.")
    return X


def _labels(obj, path):
    """A pickled one-hot label block (rows of zeros allowed) as an int8 array."""
    if not isinstance(obj, np.ndarray) or obj.ndim != 2:
        raise ValueError(f"{path} must hold a 2-D one-hot label array; got {type(obj)}.")
    if not (np.isin(obj, (0, 1)).all() and (obj.sum(axis=1) <= 1).all()):
        raise ValueError(f"{path} must hold one-hot labels (0/1 entries, at most one 1 per row).")
    return obj.astype(np.int8)


def _graph_edges(graph, path):
    """Source and target ids of the adjacency lists of ``graph`` (dict id -> list of ids), and
    the number of nodes the graph names."""
    if not isinstance(graph, dict):
        raise ValueError(f"{path} must hold a dict node id -> list of neighbour ids; "
                         f"got {type(graph)}.")
    try:
        sources = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
        counts = np.fromiter(map(len, graph.values()), dtype=np.int64, count=len(graph))
        targets = np.fromiter((c for v in graph.values() for c in v), dtype=np.int64,
                              count=int(counts.sum()))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{path} must map integer node ids to lists of integer ids "
                         f"({type(exc).__name__}: {exc}).") from exc
    if (sources.size and sources.min() < 0) or (targets.size and targets.min() < 0):
        raise ValueError(f"{path} holds negative node ids.")
    # nodes without neighbours (keys with empty lists) still count
    n_nodes = 1 + max(sources.max(initial=-1), targets.max(initial=-1))
    return np.repeat(sources, counts), targets, int(n_nodes)


def _test_ids(data: bytes, path, n_test, first, n_nodes, allx_name):
    try:
        ids = np.loadtxt(io.StringIO(data.decode("ascii")), dtype=np.int64, ndmin=1)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path} must list one integer node id per line ({exc}).") from exc
    if ids.size != n_test:
        raise ValueError(f"{path} lists {ids.size} test node ids, but the test feature block "
                         f"has {n_test} rows: the files do not belong together.")
    bad = ids[(ids < first) | (ids >= n_nodes)]
    if bad.size:
        raise ValueError(
            f"{path} holds test node ids outside [{first}, {n_nodes}): {bad[:5].tolist()}. Test "
            f"nodes follow the {first} rows of {allx_name} and lie inside the {n_nodes}-node "
            "graph."
        )
    if np.unique(ids).size != ids.size:
        twice = int(np.flatnonzero(np.bincount(ids - first) > 1)[0]) + first
        raise ValueError(f"{path} lists the test node id {twice} twice; a test index names "
                         "each test node once: the file is corrupted, delete it and fetch it "
                         "again.")
    return ids


def _existing_paths(name, folder, fetch_call):
    """The paths of the eight ``ind.<name>.*`` files in ``folder``, all checked to exist."""
    paths = {part: folder / f"ind.{name}.{part}" for part in _PARTS}
    missing = [p.name for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"Planetoid '{name}' files are missing from {folder}: {', '.join(missing)}. Download "
            f"them with {fetch_call}, or pass data_home=<folder containing "
            f"planetoid/ind.{name}.*>."
        )
    return paths


def _checked_blocks(objs, paths):
    """The ``y, tx, ty, allx, ally`` blocks, checked to have fitting shapes."""
    blocks = {p: _features(objs[p], paths[p]) for p in ("x", "tx", "allx")}
    blocks.update({p: _labels(objs[p], paths[p]) for p in ("y", "ty", "ally")})
    n_features, n_classes = blocks["allx"].shape[1], blocks["ally"].shape[1]
    for xp, yp in (("x", "y"), ("tx", "ty"), ("allx", "ally")):
        X, Y = blocks[xp], blocks[yp]
        if X.shape[0] != Y.shape[0] or (X.shape[1], Y.shape[1]) != (n_features, n_classes):
            raise ValueError(
                f"{paths[xp].name} {X.shape} and {paths[yp].name} {Y.shape} do not fit "
                f"{paths['allx'].name} {blocks['allx'].shape} and {paths['ally'].name} "
                f"{blocks['ally'].shape}: the files do not belong together."
            )
    n_train, n_allx = blocks["y"].shape[0], blocks["allx"].shape[0]
    if n_train > n_allx:
        raise ValueError(f"{paths['y'].name} has more rows ({n_train}) than "
                         f"{paths['ally'].name} ({n_allx}).")
    return tuple(blocks[p] for p in ("y", "tx", "ty", "allx", "ally"))


def _node_features(allx, tx, test_ids, n_nodes):
    """The (n_nodes, n_features) CSR features: ``allx``, then row k of ``tx`` at ``test_ids[k]``."""
    # The selection matrix P (one 1 per column) copies the tx rows exactly; nodes in neither
    # block keep zero features.
    P = sp.csr_matrix((np.ones(test_ids.size, dtype=np.float32),
                       (test_ids, np.arange(test_ids.size))), shape=(n_nodes, test_ids.size))
    n_allx, n_features = allx.shape
    padding = sp.csr_matrix((n_nodes - n_allx, n_features), dtype=np.float32)
    return (sp.vstack([allx, padding]) + P @ tx).tocsr().astype(np.float32)


def _node_targets(ally, ty, test_ids, n_nodes):
    """The (n_nodes,) int64 labels of the one-hot blocks, -1 for nodes with no label."""
    labels_1h = np.zeros((n_nodes, ally.shape[1]), dtype=np.int8)
    labels_1h[:ally.shape[0]] = ally
    labels_1h[test_ids] = ty
    target = labels_1h.argmax(axis=1).astype(np.int64)
    target[labels_1h.sum(axis=1) == 0] = -1
    return target


def _undirected_adjacency(rows, cols, n_nodes):
    """The symmetric 0/1 float32 CSR adjacency of the edges ``rows -> cols``, no self loops."""
    A = sp.coo_matrix((np.ones(rows.size, dtype=np.float32), (rows, cols)),
                      shape=(n_nodes, n_nodes)).tocsr()
    A = A.maximum(A.T).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    A.data[:] = 1.0
    return A.astype(np.float32)


def _planetoid_bunch(name, *, features, target, adjacency, n_classes, split):
    """The Bunch :func:`load_planetoid` returns, with names and a description."""
    n_nodes, n_features = features.shape
    train_idx, val_idx, test_idx = split
    return Bunch(
        data=features,
        target=target,
        adjacency=adjacency,
        train_idx=train_idx,
        val_idx=val_idx,
        test_idx=test_idx,
        feature_names=np.array([f"word_{i}" for i in range(n_features)], dtype=object),
        target_names=np.array([f"class_{i}" for i in range(n_classes)], dtype=object),
        DESCR=(
            f"Planetoid {name}: {n_nodes} nodes, {n_features} features, "
            f"{n_classes} classes, {adjacency.nnz // 2} undirected edges. Public split: "
            f"{train_idx.size} train, {val_idx.size} validation, {test_idx.size} "
            "test nodes."
        ),
    )


def load_planetoid(name="cora", data_home=None, *, verify=True):
    """Load a Planetoid citation graph (Yang et al., 2016) with its public split from local files.

    Reads the original raw files ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}`` from
    ``data_home/planetoid/`` (or ``data_home`` itself when it has no ``planetoid`` folder);
    :func:`fetch_planetoid` downloads them. Each file is checked against its published
    checksum, then the pickles are read with a restricted unpickler that only admits numpy/scipy
    array classes, and every block is checked for the shapes and values of the format: a damaged
    or inconsistent file raises an error that names it instead of giving a wrong graph.

    The test rows are stored out of order in the raw files: row ``k`` of ``tx``/``ty`` belongs to
    the node id on line ``k`` of ``ind.<name>.test.index``, which must lie after the ``allx``
    nodes and inside the graph. Graph nodes that are neither in ``allx`` nor listed as test nodes
    (isolated Citeseer nodes) get zero features and the label ``-1``, and belong to no split,
    as in the reference loaders.

    Parameters
    ----------
    name : {"cora", "citeseer", "pubmed"}, default="cora"
        Which graph.
    data_home : str or path-like, default=None
        Folder holding ``planetoid/ind.<name>.*`` (see :func:`get_data_home`).
    verify : bool, default=True
        Check every file against its published SHA-256 and refuse a mismatch. Pass ``False``
        to read files that were changed on purpose.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (n_nodes, n_features) CSR float32 features; ``target`` (n_nodes,) int64
        labels (-1 for unlabelled nodes); ``adjacency`` (n_nodes, n_nodes) symmetric CSR
        float32, no self loops; ``train_idx`` (the ``y`` nodes: 20 per class),
        ``val_idx`` (the next 500 nodes, or as many as ``allx`` holds), ``test_idx`` (the
        sorted test ids): the public split; ``feature_names``; ``target_names``; ``DESCR``.

    Raises
    ------
    FileNotFoundError
        A file is missing.
    ValueError
        A file does not match its published checksum, or is not valid Planetoid data.
    pickle.UnpicklingError
        A pickle is truncated or corrupt, or names a class outside the allow-list.

    See Also
    --------
    fetch_planetoid : Download the files into the cache, then load them.

    Examples
    --------
    A toy graph in the raw format: 4 nodes, 3 features, 2 classes; nodes 0-1 are ``allx``,
    test nodes 3 and 2 are stored in that order in ``tx``.

    >>> import pickle, tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from skdiff.datasets import load_planetoid
    >>> home = Path(tempfile.mkdtemp())
    >>> (home / "planetoid").mkdir()
    >>> onehot = np.eye(2)
    >>> parts = {"x": sp.csr_matrix([[1., 0, 0]]), "y": onehot[[0]],
    ...          "allx": sp.csr_matrix([[1., 0, 0], [0, 1, 0]]), "ally": onehot[[0, 1]],
    ...          "tx": sp.csr_matrix([[0, 0, 1.], [1, 1, 0]]), "ty": onehot[[1, 0]],
    ...          "graph": {0: [1], 1: [0, 2], 2: [1, 3], 3: [2]}}
    >>> for part, obj in parts.items():
    ...     _ = (home / "planetoid" / f"ind.cora.{part}").write_bytes(pickle.dumps(obj))
    >>> _ = (home / "planetoid" / "ind.cora.test.index").write_text("3\\n2\\n")
    >>> toy = load_planetoid("cora", data_home=home, verify=False)  # hand-made files
    >>> toy.data.toarray()
    array([[1., 0., 0.],
           [0., 1., 0.],
           [1., 1., 0.],
           [0., 0., 1.]], dtype=float32)
    >>> toy.target, toy.adjacency.nnz // 2, toy.test_idx
    (array([0, 1, 0, 1]), 3, array([2, 3]))

    With ``verify=True`` (the default) files that differ from the published ones are refused:

    >>> load_planetoid("cora", data_home=home)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Checksum mismatch for 'ind.cora.x' (...): expected sha256:23cfa55d..., got ...
    """
    if name not in _NAMES:
        raise ValueError(f"The 'name' parameter must be one of {_NAMES}; got {name!r}.")
    check_verify(verify)
    folder = _folder(get_data_home(data_home))
    fetch_call = f"skdiff.datasets.fetch_planetoid({name!r})"
    paths = _existing_paths(name, folder, fetch_call)
    raw = {part: read_verified(path, verify=verify, fetch_call=fetch_call)
           for part, path in paths.items()}
    objs = {part: _unpickle(raw[part], paths[part], fetch_call) for part in _PICKLED}
    # a corrupted or hand-made graph may name absurd node ids: its arrays would not fit
    with memory_for(f"the graph of the Planetoid files ind.{name}.* in {folder}",
                    f"they are corrupted or not Planetoid files: delete them and run "
                    f"{fetch_call}"):
        return _assembled(name, objs, raw, paths)


def _assembled(name, objs, raw, paths):
    """The :func:`load_planetoid` Bunch from the parsed files, checked."""
    y, tx, ty, allx, ally = _checked_blocks(objs, paths)
    n_train, n_allx = y.shape[0], allx.shape[0]
    rows, cols, n_graph = _graph_edges(objs["graph"], paths["graph"])
    n_nodes = max(n_allx, n_graph)
    test_ids = _test_ids(raw["test.index"], paths["test.index"], tx.shape[0], n_allx, n_nodes,
                         paths["allx"].name)
    return _planetoid_bunch(
        name,
        features=_node_features(allx, tx, test_ids, n_nodes),
        target=_node_targets(ally, ty, test_ids, n_nodes),
        adjacency=_undirected_adjacency(rows, cols, n_nodes),
        n_classes=ally.shape[1],
        split=(np.arange(n_train), np.arange(n_train, min(n_train + 500, n_allx)),
               np.sort(test_ids)),
    )

def fetch_planetoid(name="cora", data_home=None, *, download_if_missing=True, base_url=None):
    """Download a Planetoid citation graph into the cache if needed, verify it and load it.

    The eight raw files ``ind.<name>.*`` are downloaded once into
    ``get_data_home(data_home)/planetoid/``; each download is checked against the SHA-256
    published for it (a mismatch is refused and nothing is written), and a cached file is
    checked again on every load (see :func:`load_planetoid`, whose result this returns).
    Concurrent calls on the same cache are safe: downloads land under a temporary name and are
    renamed when verified, and a file lock makes a second process wait and reuse them.

    Parameters
    ----------
    name : {"cora", "citeseer", "pubmed"}, default="cora"
        Which graph.
    data_home : str or path-like, default=None
        The cache folder (see :func:`get_data_home`: ``$SKDIFF_DATA`` or ``~/skdiff_data``).
    download_if_missing : bool, default=True
        Download missing files. ``False`` raises :class:`FileNotFoundError` instead (offline
        use).
    base_url : str, default=None
        Root URL of a mirror laid out like the cache, serving
        ``<base_url>/planetoid/ind.<name>.<part>`` over http(s). ``None``: the
        ``SKDIFF_DATA_URL`` environment variable if set, else the original files at
        github.com/kimiyoung/planetoid (``raw/master/data``).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As :func:`load_planetoid`.

    Raises
    ------
    FileNotFoundError
        Files are missing and ``download_if_missing`` is false.
    ValueError
        A download or a cached file does not match its published checksum.
    ConnectionError
        A download failed.

    Examples
    --------
    >>> import tempfile
    >>> from skdiff.datasets import fetch_planetoid
    >>> cora = fetch_planetoid("cora")  # doctest: +SKIP
    >>> cora.data.shape, cora.adjacency.nnz // 2, len(cora.train_idx)  # doctest: +SKIP
    ((2708, 1433), 5278, 140)

    Offline, an empty cache is reported rather than downloaded:

    >>> fetch_planetoid("cora", data_home=tempfile.mkdtemp(),
    ...                 download_if_missing=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: Planetoid 'cora' is not in the cache: ind.cora.x, ind.cora.y, ...
    """
    if name not in _NAMES:
        raise ValueError(f"The 'name' parameter must be one of {_NAMES}; got {name!r}.")
    home = get_data_home(data_home)
    folder = _folder(home)
    if not all((folder / f"ind.{name}.{part}").is_file() for part in _PARTS):
        folder = home / "planetoid"  # download into the cache layout
    ensure_files(folder, [f"ind.{name}.{p}" for p in _PARTS], base_url=base_url,
                 mirror_dir="planetoid", original_url=_URL,
                 download_if_missing=download_if_missing, what=f"Planetoid {name!r}",
                 fetch_call=f"skdiff.datasets.fetch_planetoid({name!r})")
    return load_planetoid(name, data_home=home)
