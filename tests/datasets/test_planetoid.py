import pickle
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

from skdiff.datasets import load_planetoid

from ._toy import toy_planetoid, write_planetoid


@pytest.fixture(scope="module")
def cora(cora_home):
    return load_planetoid("cora", data_home=cora_home)


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


def _flip_feature_byte(path):
    """Turn the first stored 1.0 of the feature pickle at ``path`` into 4.0 (one byte)."""
    raw = bytearray(path.read_bytes())
    at = raw.index(b"\x00\x00\x80\x3f", raw.index(b"data")) + 3
    raw[at] ^= 0x7F  # 0x3f -> 0x40: float32 1.0 -> 4.0
    path.write_bytes(bytes(raw))


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
def test_cora_matches_reference_loader(cora, cora_home):
    feats, labels = _reference_features(cora_home / "planetoid", "cora")
    assert abs(cora.data - feats).max() == 0
    np.testing.assert_array_equal(cora.target, labels)


def test_flipped_feature_byte_is_caught(cora, cora_home, tmp_path):
    folder = shutil.copytree(cora_home / "planetoid", tmp_path / "planetoid")
    _flip_feature_byte(folder / "ind.cora.allx")
    with pytest.raises(ValueError, match=r"Checksum mismatch for 'ind.cora.allx' .*expected "
                       r"sha256:9419ba2f.*, got sha256:.*fetch_planetoid\('cora'\).*verify=False"):
        load_planetoid("cora", data_home=tmp_path)
    # the byte changed a feature: read anyway, exactly one entry differs, 1 -> 4
    changed = load_planetoid("cora", data_home=tmp_path, verify=False)
    diff = (changed.data - cora.data).tocoo()
    diff.eliminate_zeros()
    assert diff.nnz == 1 and diff.data[0] == 3.0


def test_missing_test_ids_are_padded(tmp_path):
    """A Citeseer-like file set whose test index skips an id (isolated node)."""
    parts, test_ids = toy_planetoid(test_ids=(9, 6, 8))
    write_planetoid(tmp_path / "planetoid", parts, test_ids, name="citeseer")
    d = load_planetoid("citeseer", data_home=tmp_path, verify=False)
    assert d.data.shape == (10, 5)
    np.testing.assert_array_equal(d.data[7].toarray(), 0)  # padded
    assert d.target[7] == -1
    tx = parts["tx"].toarray()
    np.testing.assert_array_equal(d.data[[9, 6, 8]].toarray(), tx)  # raw order
    np.testing.assert_array_equal(d.target[[9, 6, 8]], [0, 1, 2])
    np.testing.assert_array_equal(d.data[:6].toarray(), parts["allx"].toarray())
    np.testing.assert_array_equal(d.test_idx, [6, 8, 9])
    np.testing.assert_array_equal(d.train_idx, [0, 1, 2])
    np.testing.assert_array_equal(d.val_idx, [3, 4, 5])  # the public 500, cut at allx
    assert d.adjacency.nnz == 2 * 10  # the ring


def test_isolated_nodes_count_as_graph_nodes(tmp_path):
    """A last node without neighbours (empty list) is still a node a test id can name."""
    parts, test_ids = toy_planetoid(test_ids=(9, 6, 10))
    parts["graph"][10] = []
    write_planetoid(tmp_path / "planetoid", parts, test_ids)
    d = load_planetoid("cora", data_home=tmp_path, verify=False)
    assert d.data.shape == (11, 5) and d.adjacency.shape == (11, 11)
    assert d.adjacency[10].nnz == 0 and d.target[10] == 2
    np.testing.assert_array_equal(d.data[10].toarray()[0], parts["tx"][2].toarray()[0])


@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_any_pickle_protocol_reads_the_same(tmp_path, protocol):
    write_planetoid(tmp_path / "a" / "planetoid", protocol=2)
    write_planetoid(tmp_path / "b" / "planetoid", protocol=protocol)
    a = load_planetoid("cora", data_home=tmp_path / "a", verify=False)
    b = load_planetoid("cora", data_home=tmp_path / "b", verify=False)
    assert (a.data != b.data).nnz == 0 and (a.adjacency != b.adjacency).nnz == 0
    np.testing.assert_array_equal(a.target, b.target)


def test_default_verification_refuses_files_other_than_the_published(tmp_path):
    write_planetoid(tmp_path / "planetoid")
    with pytest.raises(ValueError, match=r"Checksum mismatch for 'ind.cora.x' .*expected "
                       r"sha256:23cfa55d"):
        load_planetoid("cora", data_home=tmp_path)


def _evil_pickles(marker):
    """(payload bytes, the global it names) for pickles that would create ``marker``."""

    class Reduce:
        def __init__(self, func, *args):
            self.func, self.args = func, args

        def __reduce__(self):
            return self.func, self.args

    import builtins
    import os

    out = [
        (pickle.dumps(Reduce(os.system, f"touch {marker}"), protocol=0), "posix.system"),
        (pickle.dumps(Reduce(os.system, f"touch {marker}"), protocol=2), "posix.system"),
        (pickle.dumps(Reduce(builtins.eval, f"open({str(marker)!r}, 'w')"), protocol=5),
         "builtins.eval"),
        (pickle.dumps(Reduce(subprocess.call, ["touch", str(marker)]), protocol=4),
         "subprocess.call"),
        # a payload hidden inside a legitimate-looking list
        (pickle.dumps([1, Reduce(os.system, f"touch {marker}")], protocol=2), "posix.system"),
        # a class reached through the allowed copyreg._reconstructor
        (pickle.dumps(Reduce(__import__("copyreg")._reconstructor, subprocess.Popen, object,
                             None), protocol=4), "subprocess.Popen"),
    ]
    return out


@pytest.mark.parametrize("part", ["y", "graph"])
def test_restricted_unpickler_refuses_code(tmp_path, part):
    marker = tmp_path / "pwned"
    folder = write_planetoid(tmp_path / "planetoid")
    for payload, global_name in _evil_pickles(marker):
        (folder / f"ind.cora.{part}").write_bytes(payload)
        with pytest.raises(pickle.UnpicklingError,
                           match=rf"Refusing to load '{global_name}' from .*ind\.cora\.{part}"):
            load_planetoid("cora", data_home=tmp_path, verify=False)
        with pytest.raises(ValueError, match="Checksum mismatch"):  # the first line of defence
            load_planetoid("cora", data_home=tmp_path)
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_pickle_names_the_file(tmp_path, damage):
    folder = write_planetoid(tmp_path / "planetoid")
    path = folder / "ind.cora.allx"
    raw = path.read_bytes()
    path.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"\x80\x02not a pickle",
                      "empty": b""}[damage])
    with pytest.raises(pickle.UnpicklingError,
                       match=r"ind\.cora\.allx is not a readable Planetoid pickle .*truncated or "
                             r"corrupt. Delete it and run skdiff.datasets.fetch_planetoid"):
        load_planetoid("cora", data_home=tmp_path, verify=False)


def test_a_graph_naming_an_absurd_node_id_is_named(tmp_path):
    parts, test_ids = toy_planetoid()
    write_planetoid(tmp_path / "planetoid", {**parts, "graph": {0: [10**13], 1: [0]}}, test_ids)
    with pytest.raises(MemoryError, match=r"graph of the Planetoid files ind.cora.\* in .*"
                                          r"corrupted or not Planetoid files: delete them and "
                                          r"run skdiff.datasets.fetch_planetoid\('cora'\)"):
        load_planetoid("cora", data_home=tmp_path, verify=False)


@pytest.mark.parametrize("ids, match", [
    ("-1\n8\n10\n", r"test node ids outside \[6, 10\): \[-1, 10\]"),
    ("9\n6\n10\n", r"outside \[6, 10\): \[10\]"),
    ("9\n5\n8\n", r"outside \[6, 10\): \[5\].*follow the 6 rows of ind.cora.allx"),
    ("9\n9\n8\n", "lists the test node id 9 twice; a test index names each test node once"),
    ("9\n6\n", "lists 2 test node ids, but the test feature block has 3 rows"),
    ("9\n6\nseven\n", "must list one integer node id per line"),
    ("9\n6\n8.5\n", "must list one integer node id per line"),
])
def test_invalid_test_index_is_refused(tmp_path, ids, match):
    folder = write_planetoid(tmp_path / "planetoid")
    (folder / "ind.cora.test.index").write_text(ids)
    with pytest.raises(ValueError, match=r"ind\.cora\.test\.index .*" + match):
        load_planetoid("cora", data_home=tmp_path, verify=False)


@pytest.mark.parametrize("edit, match", [
    (dict(tx=sp.csr_matrix(np.ones((3, 4), np.float32))),
     r"ind.cora.tx \(3, 4\) and ind.cora.ty \(3, 3\) do not fit ind.cora.allx \(6, 5\)"),
    (dict(y=np.eye(3, dtype=np.int32)[[0, 1]]),
     r"ind.cora.x \(3, 5\) and ind.cora.y \(2, 3\) do not fit"),
    (dict(ally=2 * np.eye(3, dtype=np.int32)[[0, 1, 2, 0, 1, 2]]),
     r"ind.cora.ally must hold one-hot labels"),
    (dict(ty=np.ones((3, 3), np.int32)), r"ind.cora.ty must hold one-hot labels"),
    (dict(graph=[[1], [0]]), r"ind.cora.graph must hold a dict"),
    (dict(graph={0: [1], 1: [-3]}), r"ind.cora.graph holds negative node ids"),
    (dict(allx=np.array([1.0, 2.0])), r"ind.cora.allx must hold a 2-D \(sparse\) feature"),
    (dict(tx=sp.csr_matrix(np.full((3, 5), np.nan, np.float32))),
     r"ind.cora.tx holds non-finite feature values"),
])
def test_inconsistent_files_are_refused(tmp_path, edit, match):
    parts, test_ids = toy_planetoid()
    write_planetoid(tmp_path / "planetoid", {**parts, **edit}, test_ids)
    with pytest.raises(ValueError, match=match):
        load_planetoid("cora", data_home=tmp_path, verify=False)


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="'name' parameter must be one of"):
        load_planetoid("reddit", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"Planetoid 'cora' files are missing from .*: "
                       r"ind.cora.x, .*ind.cora.test.index. Download them with "
                       r"skdiff.datasets.fetch_planetoid\('cora'\)"):
        load_planetoid("cora", data_home=tmp_path)


def test_verify_must_be_a_flag(tmp_path):
    with pytest.raises(ValueError, match="'verify' must be True or False; got 'no'"):
        load_planetoid("cora", data_home=tmp_path, verify="no")
