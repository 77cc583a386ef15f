"""fetch_planetoid / fetch_ett against a local HTTP mirror (127.0.0.1, stdlib http.server).

The always-run tests serve small synthetic files and inject their checksums into the
registry; the real-data tests serve a temporary copy of the real files with the shipped
registry untouched.
"""

import functools
import hashlib
import re
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from skdiff.datasets import fetch_ett, fetch_planetoid, load_ett, load_planetoid
from skdiff.datasets._registry import REGISTRY

from ..conftest import PLANETOID_PARTS
from ._toy import write_ett, write_planetoid

LOCK = ".skdiff-download.lock"


class _Handler(SimpleHTTPRequestHandler):
    """Serves ``server.root``, records every GET path and waits ``server.delay`` s first."""

    def do_GET(self):
        self.server.requests.append(self.path)
        time.sleep(self.server.delay)
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / "mirror"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Handler, directory=str(root)))
    server.requests, server.delay = [], 0.0
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield SimpleNamespace(root=root, url=f"http://127.0.0.1:{server.server_port}",
                          requests=server.requests, server=server)
    server.shutdown()
    server.server_close()
    thread.join()


@dataclass
class Case:
    name: str
    fetch: object  # (data_home, **kwargs) -> Bunch
    load: object  # (data_home) -> Bunch
    files: list  # paths relative to the cache / mirror root
    tampered: str  # the file a test changes


CASES = [
    Case("planetoid", lambda home, **kw: fetch_planetoid("cora", home, **kw),
         lambda home: load_planetoid("cora", home),
         [f"planetoid/ind.cora.{p}" for p in PLANETOID_PARTS], "planetoid/ind.cora.allx"),
    Case("ett", lambda home, **kw: fetch_ett("ETTh1", home, **kw),
         lambda home: load_ett("ETTh1", home), ["ett/ETTh1.csv"], "ett/ETTh1.csv"),
]


def assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if sp.issparse(x):
            assert x.shape == y.shape and x.dtype == y.dtype and (x != y).nnz == 0, key
        elif hasattr(x, "equals"):  # pandas
            assert x.equals(y), key
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=key)
        else:
            assert x == y, key


def _flip_byte(path):
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))
    return raw


def _entries(folder):
    return sorted(p.name for p in folder.iterdir())


def exercise(case, mirror, tmp_path):
    """Download, compare, cache hit, tampered download, tampered cache, offline empty cache."""
    cache = tmp_path / "cache"
    got = case.fetch(cache, base_url=mirror.url)
    assert sorted(mirror.requests) == sorted(f"/{f}" for f in case.files)
    assert_same(got, case.load(mirror.root))
    folder = cache / Path(case.tampered).parent
    assert _entries(folder) == sorted([Path(f).name for f in case.files] + [LOCK])  # no temp

    assert_same(case.fetch(cache, base_url=mirror.url), got)  # cache hit: no new request
    assert len(mirror.requests) == len(case.files)

    # a mirror serving a changed file: refused, nothing written
    fname = Path(case.tampered).name
    raw = _flip_byte(mirror.root / case.tampered)
    known = REGISTRY[fname]
    received = hashlib.sha256(raw).hexdigest()
    fresh = tmp_path / "fresh"
    url = f"{mirror.url}/{case.tampered}"
    with pytest.raises(ValueError, match=(
            rf"Downloaded '{re.escape(fname)}' from {re.escape(url)} does not match its "
            rf"published checksum: expected {known}, got sha256:{received}. The download was "
            rf"discarded: .* holds no copy of it.*base_url \(or the SKDIFF_DATA_URL")):
        case.fetch(fresh, base_url=mirror.url)
    # the files verified before it stay; no trace of the refused one, no temporary file
    before = [Path(f).name for f in case.files[: case.files.index(case.tampered)]]
    assert _entries(fresh / Path(case.tampered).parent) == sorted(before + [LOCK])

    # a changed file in the cache: refused, not silently downloaded again
    n_requests = len(mirror.requests)
    _flip_byte(cache / case.tampered)
    with pytest.raises(ValueError, match=rf"Checksum mismatch for '{re.escape(fname)}' .*"
                                         rf"expected {known}, got sha256:.* Delete it and run "):
        case.fetch(cache, base_url=mirror.url)
    assert len(mirror.requests) == n_requests

    offline = tmp_path / "offline"
    with pytest.raises(FileNotFoundError, match=rf"is not in the cache: .*{re.escape(fname)}.* "
                                                r"missing from .*download_if_missing=True"):
        case.fetch(offline, base_url=mirror.url, download_if_missing=False)
    assert not offline.exists() and len(mirror.requests) == n_requests


@pytest.fixture
def toy_mirror(mirror, monkeypatch):
    """The mirror serving synthetic Cora and ETTh1 files, their checksums in the registry."""
    write_planetoid(mirror.root / "planetoid")
    write_ett(mirror.root / "ett" / "ETTh1.csv")
    for f in mirror.root.glob("*/*"):
        monkeypatch.setitem(REGISTRY, f.name, "sha256:" + hashlib.sha256(f.read_bytes())
                            .hexdigest())
    return mirror


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fetch_synthetic(case, toy_mirror, tmp_path):
    exercise(case, toy_mirror, tmp_path)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fetch_real_data(case, mirror, tmp_path, request):
    home = request.getfixturevalue("cora_home" if case.name == "planetoid" else "ett_home")
    for f in case.files:
        (mirror.root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(home / f, mirror.root / f)
    exercise(case, mirror, tmp_path)


def test_environment_variables(toy_mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("SKDIFF_DATA", str(tmp_path / "env_home"))
    monkeypatch.setenv("SKDIFF_DATA_URL", toy_mirror.url + "/")
    assert_same(fetch_ett(), load_ett(data_home=toy_mirror.root))
    assert toy_mirror.requests == ["/ett/ETTh1.csv"]
    assert (tmp_path / "env_home" / "ett" / "ETTh1.csv").is_file()
    # the argument wins over the environment variable
    monkeypatch.setenv("SKDIFF_DATA_URL", "http://127.0.0.1:9/unreachable")
    fetch_planetoid(base_url=toy_mirror.url)
    assert len(toy_mirror.requests) == 1 + len(PLANETOID_PARTS)


def test_concurrent_fetches_download_each_file_once(toy_mirror, tmp_path):
    toy_mirror.server.delay = 0.05  # both callers find the cache empty before either finishes
    results, errors = [None, None], []

    def run(i):
        try:
            results[i] = fetch_planetoid("cora", tmp_path / "cache", base_url=toy_mirror.url)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(toy_mirror.requests) == sorted(f"/planetoid/ind.cora.{p}"
                                                 for p in PLANETOID_PARTS)
    assert_same(results[0], results[1])
    assert_same(results[0], load_planetoid("cora", toy_mirror.root))


def test_unreachable_mirror(toy_mirror, tmp_path):
    url = f"{toy_mirror.url}/nowhere"
    with pytest.raises(ConnectionError, match=(
            rf"Could not download 'ETTh1.csv' from {re.escape(url)}/ett/ETTh1.csv \(HTTPError: "
            r"404 .*set base_url \(or the SKDIFF_DATA_URL environment variable\)")):
        fetch_ett("ETTh1", tmp_path, base_url=url)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionError, match=r"Could not download 'ind.cora.x' from "
                                              rf"http://127.0.0.1:{port}/planetoid/ind.cora.x"):
        fetch_planetoid("cora", tmp_path, base_url=f"http://127.0.0.1:{port}")
    assert not list((tmp_path / "ett").glob("ETTh1*"))


def test_name_is_checked_before_any_download(tmp_path):
    with pytest.raises(ValueError, match="'name' parameter must be one of"):
        fetch_planetoid("reddit", tmp_path)
    with pytest.raises(ValueError, match="'name' must be one of"):
        fetch_ett("ETTh3", tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("data_home", [3, np.nan])
def test_data_home_must_be_a_path(data_home):
    with pytest.raises(TypeError, match=f"'data_home' must be a folder path .*; got {data_home}"):
        load_planetoid("cora", data_home=data_home)
