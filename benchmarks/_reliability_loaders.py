"""Loaders fed corrupt, truncated and malicious files; downloads from bad mirrors; generators.

Every file is written into the probe's own temporary folder (a small Planetoid graph and an
ETT excerpt in the published formats, then damaged); downloads go to a closed port of
127.0.0.1 or to a local HTTP server that serves wrong bytes, errors, truncated bodies or
nothing at all. ``generators`` probes every parameter of every public function of
:mod:`skdiff.datasets` and :mod:`skdiff.bayes_opt` (from its signature) with wrong types,
NaN, infinities, negative and absurd values, plus hand-picked conflicts.
"""

from __future__ import annotations

import inspect
import math
import os
import pickle
import socket
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
from _reliability_core import Probe, Wrong, check_close, then


# -- Planetoid ---------------------------------------------------------------------------------
def _toy_planetoid(home):
    """The docstring's 4-node graph in the raw Planetoid format (protocol-2 pickles)."""
    d = Path(home) / "planetoid"
    d.mkdir(parents=True, exist_ok=True)
    onehot = np.eye(2)
    parts = {"x": sp.csr_matrix([[1.0, 0, 0]]), "y": onehot[[0]],
             "allx": sp.csr_matrix([[1.0, 0, 0], [0, 1, 0]]), "ally": onehot[[0, 1]],
             "tx": sp.csr_matrix([[0, 0, 1.0], [1, 1, 0]]), "ty": onehot[[1, 0]],
             "graph": {0: [1], 1: [0, 2], 2: [1, 3], 3: [2]}}
    for part, obj in parts.items():
        (d / f"ind.cora.{part}").write_bytes(pickle.dumps(obj, protocol=2))
    (d / "ind.cora.test.index").write_text("3\n2\n")
    return d


class _Shell:
    """A pickle that runs a shell command when loaded."""

    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


class _Eval:
    def __init__(self, code):
        self.code = code

    def __reduce__(self):
        return (eval, (self.code,))


def _bomb():
    """A small pickle that names 10**9 neighbour ids (one list shared by 10**4 nodes)."""
    shared = list(range(100_000))
    return {i: shared for i in range(10_000)}


PLANETOID_FAULTS = {
    # name: (part, new content or a callable of the folder, expect)
    "intact copy (verify=False)": (None, None, "ok"),
    "intact copy, verify=True": (None, None, "error"),
    "a missing file": ("tx", "delete", "error"),
    "a truncated pickle": ("x", "truncate", "error"),
    "an empty file": ("graph", b"", "error"),
    "a pickle running a shell command": ("x", "shell", "error"),
    "a pickle calling eval": ("graph", "eval", "error"),
    "graph as a list": ("graph", [[1], [0, 2], [1, 3], [2]], "error"),
    "graph with string keys": ("graph", {"a": [1], 1: ["a"]}, "error"),
    "graph with a negative node id": ("graph", {0: [-1], 1: [0]}, "error"),
    "graph naming node 10**12": ("graph", {0: [10 ** 12], 1: [0]}, "error"),
    "graph naming 10**9 neighbours": ("graph", "bomb", "error"),
    "features with NaN": ("allx", sp.csr_matrix([[np.nan, 0, 0], [0, 1, 0]]), "error"),
    "features as strings": ("allx", np.array([["a", "b", "c"], ["d", "e", "f"]]), "error"),
    "features 1-D": ("allx", np.array([1.0, 0.0, 0.0]), "error"),
    "labels not one-hot": ("ally", np.array([[1, 1], [0, 1]]), "error"),
    "labels with a 2": ("ally", np.array([[2, 0], [0, 1]]), "error"),
    "labels with fewer rows than features": ("ally", np.eye(2)[[0]], "error"),
    "test labels of another class count": ("ty", np.eye(3)[[1, 0]], "error"),
    "test.index with 3 ids for 2 rows": ("test.index", b"3\n2\n1\n", "error"),
    "test.index out of range": ("test.index", b"3\n9\n", "error"),
    "test.index inside allx": ("test.index", b"3\n0\n", "error"),
    "test.index duplicate": ("test.index", b"3\n3\n", "error"),
    "test.index not integers": ("test.index", b"3\nx\n", "error"),
    "test.index negative": ("test.index", b"3\n-2\n", "error"),
    "test.index binary": ("test.index", b"\xff\xfe\x00\x01", "error"),
}


def planetoid_probe(tmp, fault, name="cora", data_home="toy"):
    """Load the toy graph after ``fault``; an intact file must give exactly the toy graph."""
    from skdiff.datasets import load_planetoid

    home = Path(tmp) / "home"
    d = _toy_planetoid(home)
    verify = fault == "intact copy, verify=True"
    marker = Path(tmp) / "pwned"
    if fault in PLANETOID_FAULTS:
        part, content, _ = PLANETOID_FAULTS[fault]
        path = d / f"ind.cora.{part}"
        tag = content if isinstance(content, str) else None
        if tag == "delete":
            path.unlink()
        elif tag == "truncate":
            path.write_bytes(path.read_bytes()[:20])
        elif tag == "shell":
            path.write_bytes(pickle.dumps(_Shell(f"touch {marker}"), protocol=2))
        elif tag == "eval":
            path.write_bytes(pickle.dumps(_Eval(f"open({str(marker)!r}, 'w')"), protocol=2))
        elif tag == "bomb":
            path.write_bytes(pickle.dumps(_bomb(), protocol=2))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            path.write_bytes(pickle.dumps(content, protocol=2))
    if data_home == "a file":
        home = Path(tmp) / "a_file"
        home.write_text("x")
    elif data_home == "int":
        home = 3
    try:
        b = load_planetoid(name, data_home=home, verify=verify)
    finally:
        if marker.exists():
            raise Wrong("loading the files ran code from them")
    got = (b.data.toarray().tolist(), b.target.tolist(), int(b.adjacency.nnz // 2),
           b.test_idx.tolist())
    want = ([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]], [0, 1, 0, 1], 3, [2, 3])
    if got != want:
        raise Wrong(f"loaded {got}, the files hold {want}")
    return "the toy graph, exactly"


# -- ETT ---------------------------------------------------------------------------------------
_HEADER = "date,HUFL,HULL,MUFL,MULL,LUFL,LULL,OT"


def _ett_rows(n=30):
    rng = np.random.RandomState(0)
    vals = np.round(rng.uniform(-5, 30, size=(n, 7)), 3)
    dates = np.datetime64("2016-07-01T00:00") + np.arange(n) * np.timedelta64(1, "h")
    rows = [f"{str(d).replace('T', ' ')}:00," + ",".join(f"{v:.3f}" for v in r)
            for d, r in zip(dates, vals)]
    return rows, vals


ETT_FAULTS = {
    "intact copy (verify=False)": "ok",
    "intact copy, verify=True": "error",
    "CRLF line endings": "ok",
    "a truncated last line": "error",
    "a NaN value": "error",
    "an inf value": "error",
    "a value 1e400": "error",
    "an empty file": "error",
    "a header only": "error",
    "a UTF-8 byte-order mark": "either",
    "an extra column": "error",
    "a missing column": "error",
    "dates out of order": "error",
    "a repeated date": "error",
    "a date that is not a date": "error",
    "latin-1 bytes": "error",
    "binary garbage": "error",
    "a blank line in the middle": "error",
    "quoted numbers": "either",
    "spaces around values": "either",
    "columns in another order": "error",
    "a 50 MB line": "error",
}


def ett_probe(tmp, fault, name="ETTh1", as_frame="auto"):
    from skdiff.datasets import load_ett

    home = Path(tmp) / "home"
    (home / "ett").mkdir(parents=True)
    rows, vals = _ett_rows()
    header = _HEADER
    nl = "\n"
    if fault == "CRLF line endings":
        nl = "\r\n"
    elif fault == "a truncated last line":
        rows[-1] = rows[-1][:25]
    elif fault == "a NaN value":
        rows[4] = rows[4].rsplit(",", 1)[0] + ",nan"
    elif fault == "an inf value":
        rows[4] = rows[4].rsplit(",", 1)[0] + ",inf"
    elif fault == "a value 1e400":
        rows[4] = rows[4].rsplit(",", 1)[0] + ",1e400"
    elif fault == "an empty file":
        header, rows = "", []
    elif fault == "a header only":
        rows = []
    elif fault == "a UTF-8 byte-order mark":
        header = "\ufeff" + header
    elif fault == "an extra column":
        rows[3] += ",1.0"
    elif fault == "a missing column":
        rows[3] = rows[3].rsplit(",", 1)[0]
    elif fault == "dates out of order":
        rows[3], rows[4] = rows[4], rows[3]
    elif fault == "a repeated date":
        rows[4] = rows[3].split(",", 1)[0] + "," + rows[4].split(",", 1)[1]
    elif fault == "a date that is not a date":
        rows[4] = "yesterday," + rows[4].split(",", 1)[1]
    elif fault == "a blank line in the middle":
        rows.insert(5, "")
    elif fault == "quoted numbers":
        rows = [r.split(",", 1)[0] + "," + ",".join(f'"{v}"' for v in r.split(",")[1:])
                for r in rows]
    elif fault == "spaces around values":
        rows = [", ".join(r.split(",")) for r in rows]
    elif fault == "columns in another order":
        header = "date,OT,HULL,MUFL,MULL,LUFL,LULL,HUFL"
    elif fault == "a 50 MB line":
        rows[2] = rows[2] + "," + "9" * 50_000_000
    text = nl.join([header] + rows) + nl if header or rows else ""
    path = home / "ett" / f"{name if name in ('ETTh1',) else 'ETTh1'}.csv"
    if fault == "latin-1 bytes":
        path.write_bytes(text.encode() + "caf\xe9,1\n".encode("latin-1"))
    elif fault == "binary garbage":
        path.write_bytes(os.urandom(4096))
    else:
        path.write_bytes(text.encode("utf-8"))
    b = load_ett(name, data_home=home, verify=fault == "intact copy, verify=True",
                 as_frame=as_frame)
    got = np.asarray(b.data)
    if got.shape != vals.shape or not np.array_equal(got, vals):
        raise Wrong(f"loaded data of shape {got.shape} differing from the file's values")
    if b.target.tolist() != vals[:, 6].tolist():
        raise Wrong("target is not the OT column")
    return "the file's values, exactly"


# -- downloads ---------------------------------------------------------------------------------
def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _serve(behaviour):
    """A local HTTP server in a thread; returns its base URL."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_HEAD(self):
            self.send_response(200)
            self.end_headers()

        def do_GET(self):
            if behaviour == "404":
                self.send_error(404)
                return
            if behaviour == "stall":
                threading.Event().wait(3600)
                return
            body = b"not the published file\n" * (1 if behaviour != "large" else 2_000_000)
            self.send_response(200)
            length = len(body) * (3 if behaviour == "truncated" else 1)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(body)
            if behaviour == "truncated":
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def fetch_probe(tmp, loader, url, env=False):
    """Download into an empty data home from a bad mirror: a clear error, nothing written."""
    from skdiff import datasets

    home = Path(tmp) / "home"
    if url == "closed port":
        url = f"http://127.0.0.1:{_closed_port()}"
    elif url.startswith("serve:"):
        url = _serve(url.split(":", 1)[1])
    kw = {} if env else {"base_url": url}
    if env:
        os.environ["SKDIFF_DATA_URL"] = url
    fn = getattr(datasets, loader)
    try:
        fn(data_home=home, **kw)
    finally:
        os.environ.pop("SKDIFF_DATA_URL", None)
        written = [p.name for p in home.rglob("*") if p.is_file() and not p.name.endswith(
            ".lock")] if home.exists() else []
        if written:
            raise Wrong(f"a failed download left {written} in the data home")
    raise Wrong("the download from a bad mirror returned data")


def fetch_offline(tmp, loader):
    from skdiff import datasets

    getattr(datasets, loader)(data_home=Path(tmp) / "home", download_if_missing=False)
    raise Wrong("returned without files")


# -- PyTorch Geometric adapter ---------------------------------------------------------------
def _pyg(**changes):
    x = np.eye(4)
    ei = np.array([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    base = dict(x=x, edge_index=ei, y=np.array([0, 1, 0, 1]),
                train_mask=np.array([True, True, False, False]))
    base.update(changes)
    return SimpleNamespace(**{k: v for k, v in base.items() if v is not _DROP})


_DROP = "__drop__"


def pyg_probe(tmp, changes, torch_keys=()):
    import torch

    from skdiff.datasets import from_pyg

    changes = {k: torch.as_tensor(v) if k in torch_keys else v for k, v in changes.items()}
    b = from_pyg(_pyg(**changes))
    A = b.adjacency.toarray()
    if A.shape[0] != np.asarray(b.features.shape)[0] or not np.all(np.isfinite(A)):
        raise Wrong(f"adjacency of shape {A.shape} for {b.features.shape[0]} nodes")
    return f"{A.shape[0]} nodes, {b.adjacency.nnz} entries"


def edge_probe(tmp, edge_index, n_nodes=None, edge_weight=None, expected=None):
    from skdiff.datasets import edge_index_to_adjacency

    A = edge_index_to_adjacency(edge_index, n_nodes=n_nodes, edge_weight=edge_weight)
    if expected is not None:
        check_close(A.toarray(), np.asarray(expected), "adjacency", atol=0.0)
    return f"adjacency {A.shape}"


# -- generators: every parameter from the signature --------------------------------------------
#: Valid arguments for the parameters without a default.
REQUIRED = {
    "make_windows": dict(series=np.sin(np.arange(60.0)), window=6, horizon=2),
    "make_gp_functions": dict(n_functions=3, n_points=8),
    "make_label_mask": dict(y=np.repeat([0, 1, 2], 10), n_per_class=2),
    "random_split_per_class": dict(y=np.repeat([0, 1, 2], 40), n_per_class=5, n_val=10,
                                   n_test=20),
    "make_planted_partition": dict(n_samples=60),
    "make_graph_signal": dict(n_samples=40),
    "edge_index_to_adjacency": dict(edge_index=np.array([[0, 1], [1, 0]])),
    "thompson_sampling": dict(objective="hartmann3", bounds=[(0.0, 1.0)] * 3, model="random",
                              n_iter=2, n_candidates=8),
    "hartmann3": dict(X=np.full((2, 3), 0.5)),
    "branin": dict(X=np.full((2, 2), 1.0)),
    "get_data_home": dict(),
}

_MODULE = {"thompson_sampling": "skdiff.bayes_opt", "hartmann3": "skdiff.bayes_opt",
           "branin": "skdiff.bayes_opt"}


def _function(name):
    import importlib

    return getattr(importlib.import_module(_MODULE.get(name, "skdiff.datasets")), name)


def _sweep_values(default):
    """(label, value, expect) for one generator parameter from its default's type."""
    if isinstance(default, bool):
        return [("'yes'", "yes", "error"), ("None", None, "either")]
    if isinstance(default, int):
        return [("True", True, "error"), ("-1", -1, "either"), ("0", 0, "either"),
                ("2.5", 2.5, "error"), ("'3'", "3", "error"), ("None", None, "either"),
                ("10**12", 10 ** 12, "either")]
    if isinstance(default, float):
        return [("nan", math.nan, "error"), ("inf", math.inf, "either"),
                ("-1.0", -1.0, "either"), ("'x'", "x", "error"), ("None", None, "either")]
    if isinstance(default, str):
        return [("'bogus'", "bogus", "error"), ("3", 3, "error"), ("None", None, "either")]
    if isinstance(default, tuple):
        return [("reversed", tuple(reversed(default)), "either"), ("('a', 'b')", ("a", "b"),
                                                                   "error"), ("()", (), "error")]
    return [("'bogus'", "bogus", "either"), ("nan", math.nan, "either"), ("-1", -1, "either")]


def generator_call(tmp, fn, kwargs):
    """Call ``fn(**kwargs)``; every numeric array it returns must be finite and the arrays
    must agree on their number of rows where they describe the same samples."""
    from skdiff.bayes_opt import hartmann3

    kwargs = {k: hartmann3 if isinstance(v, str) and v == "hartmann3" else v
              for k, v in kwargs.items()}
    res = _function(fn)(**kwargs)
    parts = list(res.values()) if isinstance(res, dict) else list(res) if isinstance(
        res, tuple) else [res]
    for p in parts:
        arr = p.data if sp.issparse(p) else p
        if isinstance(arr, np.ndarray) and arr.dtype.kind in "fc" and \
                not np.all(np.isfinite(arr)):
            raise Wrong(f"{fn} returned non-finite values")
    return then("summarising", lambda: f"{fn} returned {len(parts)} part(s)")


def _sweep():
    out = []
    for fn, required in REQUIRED.items():
        sig = inspect.signature(_function(fn))
        for pname, param in sig.parameters.items():
            default = required.get(pname, param.default)
            if default is inspect.Parameter.empty or pname in ("objective", "model"):
                continue
            if pname == "random_state":
                rows = [("'seed'", "seed", "error"), ("-1", -1, "error")]
            elif pname == "verbose":  # scikit-learn's convention: a bool or an int >= 0
                rows = [("True", True, "ok"), ("-1", -1, "error"), ("2.5", 2.5, "error"),
                        ("'3'", "3", "error")]
            else:
                rows = _sweep_values(default)
                if pname == "n_iter":  # 10**12 iterations is a valid, endless request
                    rows = [r for r in rows if r[0] != "10**12"]
            for label, value, expect in rows:
                kwargs = {**required, pname: value}
                out.append(Probe(
                    "generators", fn, f"{pname}={label}", generator_call,
                    dict(fn=fn, kwargs=kwargs), (pname,), expect,
                    f"a clear error naming '{pname}'" if expect == "error" else
                    f"a clear error naming '{pname}', or finite, consistent output",
                    f"{fn}({pname}={label}, ...)", bad=value, timeout=120))
    return out


def _handpicked():
    """Conflicts the sweep cannot find."""
    series = np.sin(np.arange(60.0))
    y3 = np.repeat([0, 1, 2], 10)
    rows = [
        ("make_windows", "window longer than the series", dict(series=series, window=70,
                                                               horizon=2), ("window",), "error"),
        ("make_windows", "a 3-D series", dict(series=np.ones((5, 4, 3)), window=2, horizon=1),
         ("series",), "error"),
        ("make_windows", "a series of strings", dict(series=np.array(list("abcdefghij")),
                                                     window=2, horizon=1), ("series",), "error"),
        ("make_windows", "target out of range", dict(series=np.ones((30, 3)), window=4,
                                                     horizon=1, target=5), ("target",), "error"),
        ("make_windows", "target 1.5", dict(series=np.ones((30, 3)), window=4, horizon=1,
                                            target=1.5), ("target",), "error"),
        ("make_windows", "target on a 1-D series", dict(series=series, window=4, horizon=1,
                                                        target=0), ("target",), "error"),
        ("make_windows", "target naming a channel twice", dict(series=np.ones((30, 3)),
                                                               window=4, horizon=1,
                                                               target=[1, -2]),
         ("target",), "error"),
        ("make_gp_functions", "n_points (8, 4) reversed", dict(n_functions=2,
                                                               n_points=(8, 4)),
         ("n_points",), "error"),
        ("make_gp_functions", "lengthscale -1", dict(n_functions=2, n_points=5,
                                                     lengthscale=-1.0), ("lengthscale",),
         "error"),
        ("make_gp_functions", "domain (1, -1)", dict(n_functions=2, n_points=5,
                                                     domain=(1.0, -1.0)), ("domain",), "error"),
        ("make_gp_functions", "X with NaN", dict(n_functions=2, n_points=3,
                                                 X=np.array([[0.0], [np.nan], [1.0]])),
         ("X",), "error"),
        # documented: n_points and n_dims are ignored when X is given
        ("make_gp_functions", "X of another length", dict(n_functions=2, n_points=3,
                                                          X=np.zeros((5, 1))), ("X",), "ok"),
        ("make_gp_functions", "kernel 'bogus'", dict(n_functions=2, n_points=3,
                                                     kernel="bogus"), ("kernel",), "error"),
        ("make_planted_partition", "fewer samples than classes",
         dict(n_samples=2, n_classes=5), ("n_samples", "n_classes"), "error"),
        ("make_planted_partition", "p_in 1.5", dict(n_samples=30, p_in=1.5), ("p_in",),
         "error"),
        ("make_graph_signal", "n_neighbors >= n_samples", dict(n_samples=5, n_neighbors=5),
         ("n_neighbors",), "error"),
        ("make_label_mask", "more labels per class than rows", dict(y=y3, n_per_class=50),
         ("n_per_class",), "either"),
        ("make_label_mask", "one class", dict(y=np.zeros(10, int), n_per_class=2), ("y",),
         "either"),
        ("random_split_per_class", "n_val + n_test above the rows",
         dict(y=np.repeat([0, 1], 20), n_per_class=5, n_val=30, n_test=30),
         ("n_val", "n_test"), "error"),
        ("thompson_sampling", "bounds low > high",
         dict(objective="hartmann3", bounds=[(1.0, 0.0)] * 3, model="random", n_iter=1),
         ("bounds",), "error"),
        ("thompson_sampling", "bounds of another dimension",
         dict(objective="hartmann3", bounds=[(0.0, 1.0)] * 2, model="random", n_iter=1),
         ("bounds", "dimension", "hartmann3"), "error"),
        ("thompson_sampling", "model without sample_y",
         dict(objective="hartmann3", bounds=[(0.0, 1.0)] * 3, model="ridge", n_iter=1),
         ("model",), "error"),
        ("hartmann3", "X of 2 dimensions", dict(X=np.zeros((2, 2))), ("X", "dimension"),
         "error"),
        ("branin", "X of 3 dimensions", dict(X=np.zeros((2, 3))), ("X", "dimension"),
         "error"),
    ]
    out = [Probe("generators", fn, name, generator_call, dict(fn=fn, kwargs=kw), names, expect,
                 f"a clear error naming {' / '.join(names)}" if expect == "error" else
                 "a clear error, or finite, consistent output", f"{fn}(...)  # {name}",
                 timeout=120)
           for fn, name, kw, names, expect in rows]
    for name, objective, expect in (("an objective returning NaN", "nan", "error"),
                                    ("an objective returning 2 values per point", "wide",
                                     "error")):
        out.append(Probe("generators", "thompson_sampling", name, thompson_bad_objective,
                         dict(kind=objective), ("objective",), expect,
                         "a clear error naming the objective, or a finite best value",
                         f"thompson_sampling(f_{objective}, bounds, model='random')"))
    out.append(Probe("generators", "log_likelihood_scorer", "a DIFFormerRegressor",
                     scorer_other_estimator, {}, ("log_likelihood", "NDPRegressor",
                                                  "estimator"), "error",
                     "a clear error: the scorer needs an estimator with log_likelihood",
                     "log_likelihood_scorer(DIFFormerRegressor().fit(X, y), X, y)"))
    return out


def thompson_bad_objective(tmp, kind):
    from skdiff.bayes_opt import hartmann3, thompson_sampling

    def f(X):
        v = hartmann3(X)
        if kind == "nan":
            v[0] = np.nan
            return v
        return np.c_[v, v]

    res = thompson_sampling(f, [(0.0, 1.0)] * 3, model="random", n_iter=3, n_init=2,
                            random_state=0)
    if not np.isfinite(res.y_best) or len(res.y) != len(res.X):
        raise Wrong(f"y_best={res.y_best}, {len(res.X)} points and {len(res.y)} values")
    return f"y_best={res.y_best:.3f}"


def scorer_other_estimator(tmp):
    from _reliability_core import fitted

    from skdiff import log_likelihood_scorer

    model, X, y = fitted("DIFFormerRegressor")
    return f"score {log_likelihood_scorer(model, X, y)}"


def get_data_home_probe(tmp, value):
    from skdiff.datasets import get_data_home

    return str(get_data_home(value))


# -- the probe list ---------------------------------------------------------------------------
def probes():
    out = []
    for fault, (_, _, expect) in PLANETOID_FAULTS.items():
        out.append(Probe("loaders", "load_planetoid", fault, planetoid_probe, dict(fault=fault),
                         ("ind.cora", "planetoid", "cora"), expect,
                         "exactly the toy graph" if expect == "ok" else
                         "a clear error naming the file; no code runs",
                         f"load_planetoid('cora', data_home=home, verify=False)  # {fault}",
                         timeout=180))
    for label, kw, expect in (("name 'CORA'", dict(name="CORA"), "error"),
                              ("name None", dict(name=None), "error"),
                              ("data_home a file", dict(data_home="a file"), "error"),
                              ("data_home 3", dict(data_home="int"), "error")):
        out.append(Probe("loaders", "load_planetoid", label, planetoid_probe,
                         dict(fault="-", **kw), ("name", "data_home", "a_file", "3"), expect,
                         "a clear error naming the argument", f"load_planetoid({label})"))
    for fault, expect in ETT_FAULTS.items():
        out.append(Probe("loaders", "load_ett", fault, ett_probe, dict(fault=fault),
                         ("ETTh1.csv", "ETTh1", "line"), expect,
                         "exactly the file's values" if expect == "ok" else
                         "a clear error naming the file (and line)" + (
                             ", or exactly the file's values" if expect == "either" else ""),
                         f"load_ett('ETTh1', data_home=home, verify=False)  # {fault}",
                         timeout=240))
    for label, kw in (("name 'etth1'", dict(name="etth1")), ("as_frame 'yes'",
                                                             dict(as_frame="yes"))):
        out.append(Probe("loaders", "load_ett", label, ett_probe,
                         dict(fault="intact copy (verify=False)", **kw), ("name", "as_frame"),
                         "error", "a clear error naming the argument", f"load_ett({label})"))
    for loader in ("fetch_planetoid", "fetch_ett"):
        for label, url, expect in (
                ("a closed port", "closed port", "error"),
                ("a mirror serving wrong bytes", "serve:wrong", "error"),
                ("a mirror answering 404", "serve:404", "error"),
                ("a mirror that stalls", "serve:stall", "error"),
                ("a mirror that cuts the body short", "serve:truncated", "error"),
                ("a mirror serving 46 MB of wrong bytes", "serve:large", "error"),
                ("a file:// URL", "file:///etc", "error"),
                ("a URL without a scheme", "not a url", "error"),
                ("a malformed URL", "http://[::1", "error")):
            out.append(Probe("loaders", loader, f"base_url: {label}", fetch_probe,
                             dict(loader=loader, url=url),
                             ("base_url", "SKDIFF_DATA_URL", "127.0.0.1", url),
                             expect, "a clear error naming the URL or base_url; nothing "
                             "written to the data home", f"{loader}(base_url=<{label}>)",
                             timeout=240))
        out.append(Probe("loaders", loader, "SKDIFF_DATA_URL: a closed port", fetch_probe,
                         dict(loader=loader, url="closed port", env=True),
                         ("base_url", "SKDIFF_DATA_URL", "127.0.0.1"), "error",
                         "a clear error naming the URL; nothing written",
                         f"SKDIFF_DATA_URL=http://127.0.0.1:<closed> {loader}()"))
        out.append(Probe("loaders", loader, "download_if_missing=False", fetch_offline,
                         dict(loader=loader), ("download_if_missing", "cache"), "error",
                         "a clear FileNotFoundError", f"{loader}(download_if_missing=False)"))
    pyg = [
        ("valid numpy data", {}, (), "ok"),
        ("valid torch tensors", {"x": np.eye(4), "edge_index": np.array([[0, 1], [1, 0]])},
         ("x", "edge_index"), "ok"),
        ("x missing", {"x": _DROP}, (), "error", ("data.x", "x")),
        ("edge_index (n_edges, 2)", {"edge_index": np.array([[0, 1], [1, 0], [1, 2]])}, (),
         "error", ("edge_index",)),
        ("edge_index of floats", {"edge_index": np.array([[0.0, 1.0], [1.0, 0.0]])}, (),
         "error", ("edge_index",)),
        ("edge_index negative", {"edge_index": np.array([[0, -1], [1, 0]])}, (), "error",
         ("edge_index",)),
        ("edge_index beyond the nodes", {"edge_index": np.array([[0, 9], [1, 0]])}, (),
         "error", ("edge_index",)),
        ("num_nodes disagrees", {"num_nodes": 7}, (), "error", ("num_nodes",)),
        ("edge_attr of 3 columns", {"edge_attr": np.ones((6, 3))}, (), "error",
         ("edge_attr",)),
        ("edge_weight NaN", {"edge_weight": np.r_[np.nan, np.ones(5)]}, (), "error",
         ("edge_weight",)),
        ("edge_weight negative", {"edge_weight": np.r_[-1.0, np.ones(5)]}, (), "error",
         ("edge_weight",)),
        ("edge_weight one short", {"edge_weight": np.ones(5)}, (), "error", ("edge_weight",)),
        ("y one short", {"y": np.array([0, 1, 0])}, (), "error", ("data.y", "y")),
        ("train_mask of ints", {"train_mask": np.array([1, 1, 0, 0])}, (), "error",
         ("train_mask",)),
        ("x with NaN", {"x": np.r_[np.eye(4)[:3], [[np.nan, 0, 0, 0]]]}, (), "error", ("x",)),
        ("x of strings", {"x": np.array([["a"]] * 4)}, (), "error", ("x",)),
        ("x 3-D", {"x": np.ones((4, 2, 2))}, (), "error", ("x",)),
        ("x sparse", {"x": sp.csr_matrix(np.eye(4))}, (), "ok"),
    ]
    for row in pyg:
        name, changes, torch_keys, expect = row[:4]
        names = row[4] if len(row) > 4 else ("data",)
        out.append(Probe("loaders", "from_pyg", name, pyg_probe,
                         dict(changes=changes, torch_keys=torch_keys), names, expect,
                         "a clear error naming the attribute" if expect == "error" else
                         "a consistent adjacency", f"from_pyg(data)  # {name}"))
    ei = np.array([[0, 1, 1, 1], [1, 0, 2, 2]])
    edges = [
        ("repeated edges add up", dict(edge_index=ei, n_nodes=3,
                                       expected=[[0, 1, 0], [1, 0, 2], [0, 0, 0]]), "ok",
         ("edge_index",)),
        ("no edges", dict(edge_index=np.zeros((2, 0), int)), "ok", ("edge_index",)),
        ("n_nodes True", dict(edge_index=ei, n_nodes=True), "error", ("n_nodes",)),
        ("n_nodes 1.5", dict(edge_index=ei, n_nodes=1.5), "error", ("n_nodes",)),
        ("n_nodes below the ids", dict(edge_index=ei, n_nodes=2), "error",
         ("n_nodes", "edge_index")),
        ("n_nodes 10**12", dict(edge_index=ei, n_nodes=10 ** 12), "either", ("n_nodes",)),
        ("edge_index 1-D", dict(edge_index=np.array([0, 1])), "error", ("edge_index",)),
        ("edge_weight wrong length", dict(edge_index=ei, edge_weight=np.ones(3)), "error",
         ("edge_weight",)),
    ]
    for name, kw, expect, names in edges:
        out.append(Probe("loaders", "edge_index_to_adjacency", name, edge_probe, kw, names,
                         expect, "a clear error naming the argument" if expect != "ok" else
                         "the summed adjacency", f"edge_index_to_adjacency(...)  # {name}",
                         bad=kw.get("n_nodes")))
    for label, value, expect in (("3", 3, "error"), ("'~'", "~", "ok"), ("None", None, "ok")):
        out.append(Probe("loaders", "get_data_home", f"data_home={label}", get_data_home_probe,
                         dict(value=value), ("data_home",), expect,
                         "a clear error naming data_home" if expect == "error" else "a path",
                         f"get_data_home({label})"))
    return out + _sweep() + _handpicked()
