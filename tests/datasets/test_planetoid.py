import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skdiff.datasets import load_planetoid


@pytest.fixture(scope="module")
def cora(data_home):
    return load_planetoid("cora", data_home=data_home)


def _reference_features(folder, name):
    """Kipf & Welling's loader, written out plainly (trusted files, plain pickle)."""
    parts = {}
    for p in ("x", "y", "tx", "ty", "allx", "ally"):
        with open(folder / f"ind.{name}.{p}", "rb") as f:
            parts[p] = pickle.load(f, encoding="latin1")
    test_idx = [int(line) for line in open(folder / f"ind.{name}.test.index")]
    rng_ = np.sort(test_idx)
    feats = sp.vstack((parts["allx"], parts["tx"])).tolil()
    feats[test_idx, :] = feats[rng_, :]
    labels = np.vstack((parts["ally"], parts["ty"]))
    labels[test_idx, :] = labels[rng_, :]
    return feats.tocsr(), labels.argmax(1)


def test_cora_shapes_and_public_split(cora):
    assert cora.data.shape == (2708, 1433)
    assert sp.issparse(cora.data) and cora.data.format == "csr"
    assert cora.adjacency.nnz == 2 * 5278
    assert (cora.adjacency != cora.adjacency.T).nnz == 0
    assert cora.adjacency.diagonal().sum() == 0
    np.testing.assert_array_equal(np.bincount(cora.target), [351, 217, 418, 818, 426, 298, 180])
    np.testing.assert_array_equal(np.bincount(cora.target[cora.train_idx]), [20] * 7)
    assert len(cora.val_idx) == 500 and len(cora.test_idx) == 1000
    assert not set(cora.train_idx) & set(cora.test_idx)
    assert np.all(np.diff(cora.test_idx) > 0)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_cora_matches_reference_loader(cora, data_home):
    feats, labels = _reference_features(data_home / "planetoid", "cora")
    assert abs(cora.data - feats).max() == 0
    np.testing.assert_array_equal(cora.target, labels)


def test_restricted_unpickler_refuses_code(tmp_path, data_home):
    folder = tmp_path / "planetoid"
    folder.mkdir()
    for f in (data_home / "planetoid").glob("ind.cora.*"):
        (folder / f.name).write_bytes(f.read_bytes())

    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo pwned",))

    (folder / "ind.cora.y").write_bytes(pickle.dumps(Evil()))
    with pytest.raises(pickle.UnpicklingError, match="Refusing to load 'posix.system'"):
        load_planetoid("cora", data_home=tmp_path)


def test_missing_test_ids_are_padded(tmp_path):
    """A Citeseer-like file set whose test index skips an id (isolated node)."""
    rng = np.random.default_rng(0)
    n_feat, n_cls = 5, 3
    allx = sp.csr_matrix(rng.integers(0, 2, (6, n_feat)).astype(np.float32))
    ally = np.eye(n_cls)[rng.integers(0, n_cls, 6)]
    test_ids = np.array([9, 6, 8])  # id 7 is missing from tx
    tx = sp.csr_matrix(np.arange(3 * n_feat, dtype=np.float32).reshape(3, n_feat) + 1)
    ty = np.eye(n_cls)[[0, 1, 2]]
    graph = {i: [(i + 1) % 10] for i in range(10)}
    folder = tmp_path / "planetoid"
    folder.mkdir()
    for part, obj in dict(x=allx[:3], y=ally[:3], tx=tx, ty=ty, allx=allx, ally=ally,
                          graph=graph).items():
        (folder / f"ind.citeseer.{part}").write_bytes(pickle.dumps(obj, protocol=2))
    (folder / "ind.citeseer.test.index").write_text("\n".join(map(str, test_ids)))
    d = load_planetoid("citeseer", data_home=tmp_path)
    assert d.data.shape == (10, n_feat)
    np.testing.assert_array_equal(d.data[7].toarray(), 0)  # padded
    assert d.target[7] == -1
    np.testing.assert_array_equal(d.data[9].toarray()[0], tx[0].toarray()[0])  # raw order
    np.testing.assert_array_equal(d.target[[9, 6, 8]], [0, 1, 2])
    np.testing.assert_array_equal(d.test_idx, [6, 8, 9])


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="'name' parameter must be one of"):
        load_planetoid("reddit", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match="Pass data_home"):
        load_planetoid("cora", data_home=tmp_path)
