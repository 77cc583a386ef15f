"""Beyond one process: searches on a Dask cluster, inference spread over its workers,
Ray's joblib backend, and data-parallel training with Hugging Face Accelerate."""

import builtins
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, KFold

import skdiff
from skdiff import DIFFormerClassifier, FlowformerRegressor, Graph
from skdiff.datasets import make_planted_partition

ROOT = Path(__file__).resolve().parents[1]
#: where this skdiff is imported from: given to worker processes, so they unpickle the same
PACKAGE_PARENT = str(Path(skdiff.__file__).resolve().parents[1])


def _env_with_package():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH"))
                                        if p)
    env["OMP_NUM_THREADS"] = "1"
    return env


def _sequences(n=120, length=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, length)).cumsum(1).astype(np.float32)
    return X, X[:, -1] + 0.1 * rng.normal(size=n)


# search candidates: tiny networks, one thread, fixed seeds, on the CPU
SEARCHES = [
    (DIFFormerClassifier(n_layers=1, hidden_dim=8, max_epochs=10, device="cpu", n_threads=1,
                         random_state=0),
     {"lr": [1e-2, 3e-2]},
     lambda: make_classification(90, 5, n_informative=3, random_state=0)),
    (FlowformerRegressor(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=4, batch_size=32,
                         device="cpu", n_threads=1, random_state=0),
     {"lr": [1e-3, 1e-2]}, _sequences),
]


# -- Dask -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install "
                              "'dask[distributed]', part of the 'distributed' extra)")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit="1GiB", dashboard_address=None,
                                  env=_env_with_package()) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.mark.parametrize("estimator,grid,data", SEARCHES,
                         ids=lambda v: type(v).__name__ if hasattr(v, "fit") else "")
def test_search_on_a_dask_cluster_matches_one_process(dask_client, estimator, grid, data):
    from distributed import get_task_stream

    X, y = data()
    cv = KFold(3, shuffle=True, random_state=0)
    local = GridSearchCV(estimator, grid, cv=cv, n_jobs=1).fit(X, y)
    with get_task_stream(dask_client) as tasks, joblib.parallel_config(backend="dask"):
        spread = GridSearchCV(estimator, grid, cv=cv, n_jobs=-1).fit(X, y)
    assert len(tasks.data) >= 1  # the fits ran on the cluster's workers
    assert {t["worker"] for t in tasks.data} <= set(dask_client.scheduler_info()["workers"])
    for key in ["params"] + [f"split{i}_test_score" for i in range(3)]:
        np.testing.assert_array_equal(spread.cv_results_[key], local.cv_results_[key])
    assert spread.best_params_ == local.best_params_
    np.testing.assert_array_equal(spread.predict(X), local.predict(X))


def _predict_rows(estimator, path, start, stop):
    """Probabilities of rows ``start:stop`` of the memory-mapped features at ``path``."""
    features = np.load(path, mmap_mode="r")
    return estimator.predict_proba(features[start:stop])


def test_inductive_prediction_spread_over_dask_workers(dask_client, tmp_path):
    X, y, A = make_planted_partition(400, 3, p_in=0.05, p_out=0.003, n_features=6,
                                     feature_signal=1.0, random_state=0)
    clf = DIFFormerClassifier(n_layers=2, hidden_dim=16, max_epochs=20, batch_size=100,
                              device="cpu", n_threads=1, random_state=0)
    clf.fit(X.astype(np.float32), y, adjacency=A)
    new = np.random.default_rng(1).normal(size=(1000, 6)).astype(np.float32)
    path = tmp_path / "new_rows.npy"
    np.save(path, new)
    # every worker gets the fitted estimator (its cached per-layer summaries) once and
    # predicts its chunks of rows from the memory map
    remote = dask_client.scatter(clf, broadcast=True)
    bounds = [(i, min(i + 150, len(new))) for i in range(0, len(new), 150)]
    futures = dask_client.map(_predict_rows, [remote] * len(bounds), [str(path)] * len(bounds),
                              *zip(*bounds), pure=False)
    spread = np.concatenate(dask_client.gather(futures))
    workers = {w for ws in dask_client.who_has(futures).values() for w in ws}
    assert len(workers) == 2
    np.testing.assert_allclose(spread, clf.predict_proba(new), rtol=1e-5, atol=1e-6)


# -- Ray --------------------------------------------------------------------------------------
def test_search_with_rays_joblib_backend_matches_one_process():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install ray); the "
                                            "recipe is in docs/scaling.md")
    from ray.util.joblib import register_ray

    estimator, grid, data = SEARCHES[0]
    X, y = data()
    local = GridSearchCV(estimator, grid, cv=3, n_jobs=1).fit(X, y)
    builtin_print = builtins.print  # ray.init replaces it (worker logs go to the driver)
    ray.init(num_cpus=2, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": PACKAGE_PARENT}})
    try:
        register_ray()
        with joblib.parallel_config(backend="ray"):
            spread = GridSearchCV(estimator, grid, cv=3, n_jobs=-1).fit(X, y)
    finally:
        ray.shutdown()
        builtins.print = builtin_print  # else later pickles of skorch's print sink fail
    np.testing.assert_array_equal(spread.cv_results_["mean_test_score"],
                                  local.cv_results_["mean_test_score"])


# -- Accelerate -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def accelerator():
    accelerate = pytest.importorskip(
        "accelerate", reason="accelerate is not installed (pip install accelerate, part of "
                             "the 'accelerate' extra)")
    return accelerate.Accelerator(cpu=True)


def test_accelerated_estimators_pickle_search_and_warm_start(accelerator):
    X, y, A = make_planted_partition(300, 3, p_in=0.06, p_out=0.004, n_features=6,
                                     feature_signal=0.5, random_state=0)
    g = Graph(X, A)
    params = dict(n_layers=1, hidden_dim=8, max_epochs=8, batch_size=100, device="cpu",
                  n_threads=1, random_state=0)
    ids = g.node_ids()
    plain = DIFFormerClassifier(**params).fit(ids, y, graph=g)
    acc = DIFFormerClassifier(**params, accelerator=accelerator).fit(ids, y, graph=g)
    assert type(acc.net_).__name__ == "AcceleratedNet"
    # one process: the same training as without the accelerator
    np.testing.assert_array_equal(acc.predict_proba(ids), plain.predict_proba(ids))
    loaded = pickle.loads(pickle.dumps(acc))
    assert loaded.device_ == "cpu"
    np.testing.assert_array_equal(loaded.predict_proba(ids), acc.predict_proba(ids))
    # a warm start trains through the accelerator again, as the plain estimator does
    for est in (plain, acc):
        est.set_params(warm_start=True, max_epochs=3).fit(ids, y, graph=g)
    np.testing.assert_array_equal(acc.predict_proba(ids), plain.predict_proba(ids))
    # a search clones the accelerated estimator; its scores are those of plain fits
    grid = {"lr": [1e-2, 3e-2]}
    searches = [GridSearchCV(DIFFormerClassifier(**params, accelerator=a), grid, cv=2)
                .fit(ids, y, graph=g) for a in (None, accelerator)]
    np.testing.assert_array_equal(searches[0].cv_results_["mean_test_score"],
                                  searches[1].cv_results_["mean_test_score"])


def test_accelerated_flowformer_prints_nothing_without_verbose(accelerator, capsys):
    X, y = _sequences()
    est = FlowformerRegressor(hidden_dim=8, n_heads=2, n_layers=1, max_epochs=3,
                              batch_size=32, device="cpu", n_threads=1, random_state=0,
                              accelerator=accelerator).fit(X, y)
    assert capsys.readouterr().out == ""
    ref = FlowformerRegressor(**{**est.get_params(), "accelerator": None}).fit(X, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-6)
    assert est.score(X, y) > 0.9


def test_two_process_accelerate_launch_matches_one_process(accelerator, tmp_path):
    """``benchmarks/accelerate_fit.py`` under ``accelerate launch`` with two CPU processes
    (gloo): Flowformer and mini-batch DIFFormer scores within its tolerance of one
    process's, the same network in both processes, pickling, a search and the full-batch
    refusal (the script exits non-zero on any of them)."""
    launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable)) or \
        shutil.which("accelerate")
    if launcher is None:
        pytest.skip("the accelerate launcher is not on PATH")
    out = tmp_path / "accelerate_fit.json"
    with socket.socket() as s:  # a free port for the processes' rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
           str(port),
           str(ROOT / "benchmarks" / "accelerate_fit.py"), "--cpu", "--quick", "--json",
           str(out)]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                             env=_env_with_package(), cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("the two-process launch did not finish within 600 s")
    log = run.stdout + run.stderr
    if "accelerate_fit: 2 processes" not in log:
        pytest.skip(f"two processes could not start on this machine:\n{log[-2000:]}")
    assert run.returncode == 0, log[-4000:]
    figures = json.loads(out.read_text())
    assert figures["processes"] == 2
    for task in ("flowformer_r2", "difformer_acc"):
        r = figures[task]
        assert abs(r["distributed"] - r["single_process"]) <= figures["tolerance"]
        assert r["same_network_everywhere"] and r["pickle_predicts_same"]
    assert figures["search_same_everywhere"] and figures["full_batch_refused"]


def test_the_accelerator_class_instead_of_an_instance_is_named():
    accelerate = pytest.importorskip("accelerate")
    X = np.random.RandomState(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match=r"'accelerator' parameter must be an "
                                         r"accelerate.Accelerator instance.*the class itself"):
        FlowformerRegressor(max_epochs=1, accelerator=accelerate.Accelerator).fit(X, X[:, 0])


def test_mixed_precision_beside_an_accelerators_own_is_refused():
    class Accelerating:  # the attributes fit reads of an accelerate.Accelerator
        device, num_processes, mixed_precision = "cpu", 1, "bf16"

        def prepare(self, *args):
            return args

        def backward(self, loss):
            loss.backward()

    X = np.random.RandomState(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match=r"mixed_precision='fp16' with an accelerator that runs "
                                         r"its own mixed precision \('bf16'\).*"
                                         r"Accelerator\(mixed_precision='no'\)"):
        FlowformerRegressor(max_epochs=1, mixed_precision="fp16",
                            accelerator=Accelerating()).fit(X, X[:, 0])
