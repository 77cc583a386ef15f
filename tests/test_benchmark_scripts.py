"""The benchmark and training scripts' helpers: the command they record (without machine
paths) and the defaults page they render. No sphinx needed, unlike ``test_benchmark_pages.py``."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_ndp_scripts_record_the_command_without_machine_paths(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    common = _load("_ndp_common_under_test", ROOT / "benchmarks" / "_ndp_common.py")
    out = tmp_path / "result.json"
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "ndp_speed.py"), "--json",
                                      str(out), "--cache", str(ROOT / "benchmarks" / "x")])
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    common.write_json(out, {"rows": []})
    doc = json.loads(out.read_text())
    assert doc["command"] == ("OMP_NUM_THREADS=1 python benchmarks/ndp_speed.py --json PATH "
                              "--cache benchmarks/x")
    assert list(doc)[:3] == ["command", "date", "environment"]
    assert {"device_name", "torch", "threads", "cpu_count"} <= set(doc["environment"])


def test_pretrain_script_records_the_command_without_machine_paths(monkeypatch, tmp_path):
    """A shipped weight's manifest records how to rerun its training: the run's own
    arguments, without --resume and --max-seconds (which only steer one process) and
    without machine paths."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("pretrain_ndp_under_test", ROOT / "scripts" / "pretrain_ndp.py")
    weights = str(ROOT / "skdiff" / "weights" / "gp_d1.pt")
    got = script._command(["--prior", "gp", "--n-dims", "2", "3", "--run-dir", str(tmp_path),
                           "--init-from", weights, "--resume", "--max-seconds", "480"])
    assert got == ("python scripts/pretrain_ndp.py --prior gp --n-dims 2 3 --run-dir PATH "
                   "--init-from skdiff/weights/gp_d1.pt")
    assert script._command(["--run-dir", "runs/gp d1"]) == \
        "python scripts/pretrain_ndp.py --run-dir 'runs/gp d1'"
    # the --option=value form is mapped alike
    assert script._command([f"--run-dir={tmp_path}", f"--init-from={weights}"]) == \
        "python scripts/pretrain_ndp.py --run-dir=PATH --init-from=skdiff/weights/gp_d1.pt"


def test_pretrain_script_trains_an_anisotropic_prior_that_loads_by_its_path(monkeypatch,
                                                                         tmp_path):
    """``--anisotropic`` trains on per-dimension lengthscales, records it in the manifest,
    and the weights serve an NDPRegressor by their path; installing them over the isotropic
    registered prior is refused."""
    import numpy as np

    from skdiff import NDPRegressor
    from skdiff.diffusion.priors import PriorWeightsError, get_prior_config, load_prior_file

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("pretrain_ndp_anisotropic", ROOT / "scripts" / "pretrain_ndp.py")
    with pytest.raises(SystemExit):
        script.main(["--prior", "gp", "--n-dims", "2", "--anisotropic", "--install",
                     "--run-dir", str(tmp_path / "refused")])
    assert not (tmp_path / "refused").exists()
    script.main(["--prior", "gp", "--n-dims", "2", "--anisotropic", "--steps", "2",
                 "--steps-per-epoch", "1", "--verbose", "0", "--run-dir", str(tmp_path)])
    weights = tmp_path / "weights" / "gp_d2.pt"
    manifest = json.loads(weights.with_suffix(".json").read_text())
    assert manifest["config"]["anisotropic"] is True and manifest["complete"]
    X = np.random.RandomState(0).uniform(size=(6, 2))
    ndp = NDPRegressor(prior=str(weights), n_samples=4, random_state=0).fit(X, X.sum(1))
    assert ndp.prior_config_.anisotropic
    assert ndp.predict(X[:3]).shape == (3,)
    # checked against the registered (isotropic) gp prior, the weights are stale
    with pytest.raises(PriorWeightsError, match="anisotropic"):
        load_prior_file(weights, expected=get_prior_config("gp", 2))


def test_bayes_opt_benchmark_functions_have_their_stated_minima(monkeypatch):
    """Every objective of ``bayes_opt_hartmann.py`` reaches its recorded global minimum
    (the regret is measured from it) and nothing on a fine grid of its box lies below."""
    import numpy as np

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bo = _load("bayes_opt_hartmann_under_test", ROOT / "benchmarks" / "bayes_opt_hartmann.py")
    argmins = {"hartmann3": [[0.114614, 0.555649, 0.852547]],
               "branin": [[-np.pi, 12.275], [np.pi, 2.275], [9.42478, 2.475]],
               "camel": [[0.0898, -0.7126], [-0.0898, 0.7126]],
               "goldstein_price": [[0.0, -1.0]],
               "styblinski_tang3": [[-2.903534] * 3],
               "rosenbrock3": [[1.0, 1.0, 1.0]]}
    assert set(bo.FUNCTIONS) == set(argmins)
    for name, (f, bounds, f_min) in bo.FUNCTIONS.items():
        np.testing.assert_allclose(f(np.array(argmins[name])), f_min, atol=1e-4)
        axes = [np.linspace(lo, hi, 101) for lo, hi in bounds]
        grid = np.stack(np.meshgrid(*axes), -1).reshape(-1, len(bounds))
        assert f(grid).min() >= f_min - 1e-6, name


def test_released_protocol_scores_the_exact_gp_conditional(monkeypatch):
    """``ndp_released_protocol.py`` scores the exact GP's predictive of the targets given
    the context: its log density equals the joint's minus the context's, its mean is
    ``GaussianProcessRegressor``'s with the true kernel, and the optimum grows with the
    context."""
    import numpy as np
    from scipy.stats import multivariate_normal
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    rp = _load("ndp_released_protocol_under_test", ROOT / "benchmarks" / "ndp_released_protocol.py")
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(30, 2))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1) / (0.25 * np.sqrt(2)) ** 2)
    S = K + rp.NOISE_SD ** 2 * np.eye(30)
    y = rng.multivariate_normal(np.zeros(30), S)
    ctx, tgt = np.arange(7), np.arange(10, 30)
    loglik, mse = rp._score(S, y, ctx, tgt)
    both = np.concatenate([ctx, tgt])
    dense = (multivariate_normal(cov=S[np.ix_(both, both)]).logpdf(y[both])
             - multivariate_normal(cov=S[np.ix_(ctx, ctx)]).logpdf(y[ctx]))
    np.testing.assert_allclose(loglik, dense / len(tgt), rtol=1e-8)
    gpr = GaussianProcessRegressor(RBF(0.25 * np.sqrt(2)), alpha=rp.NOISE_SD ** 2,
                                   optimizer=None).fit(X[ctx], y[ctx])
    np.testing.assert_allclose(mse, np.mean((gpr.predict(X[tgt]) - y[tgt]) ** 2), rtol=1e-8)

    res = rp.optimum_by_context("se", 1, 64, np.random.default_rng(1))
    for noise, a in res.items():
        assert a.shape == (64, 10, 2)
        # more context, a better optimum on average: the bound the script rests on
        assert a[:, -1, 0].mean() > a[:, 4, 0].mean() > a[:, 0, 0].mean(), noise
        assert a[:, -1, 1].mean() < a[:, 0, 1].mean(), noise
    # shared normals pin the context's function values down: at D = 1 the targets are
    # predicted better than with independent noise (the 1-D rows of the results table)
    assert res["shared"][:, -1, 0].mean() > res["independent"][:, -1, 0].mean()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_bayes_opt_picks_records_the_candidate_thompson_sampling_evaluates(monkeypatch):
    """``bayes_opt_picks.py`` reads each pick from the samples its recording model returned:
    the candidate it ranks lowest must be the point ``thompson_sampling`` evaluated next, and
    its true rank and gap are measured against all candidates."""
    import numpy as np

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    picks = _load("bayes_opt_picks_under_test", ROOT / "benchmarks" / "bayes_opt_picks.py")
    from skdiff.bayes_opt import hartmann3, thompson_sampling

    bounds = [(0.0, 1.0)] * 3
    gpr = picks.bo_gpr(bounds)
    res = thompson_sampling(hartmann3, bounds, model=picks._Recording(gpr, "t"), n_iter=4,
                            n_candidates=64, random_state=0, y_transform=None,
                            local_fraction=0.0)  # the picks' uniform candidates
    record = picks._RECORDS.pop("t")
    assert len(record) == 4
    for i, (cand, f) in enumerate(record):
        assert cand.shape == (64, 3) and f.shape == (64, 1)
        np.testing.assert_array_equal(cand[np.argmin(f[:, 0])], res.X[3 + i])
    out = picks.picks("gpr", gpr, hartmann3, bounds, -3.86278, [0], 4, {"y_transform": None})
    assert len(out["rank"][0]) == 4 and min(out["rank"][0]) >= 0
    assert max(out["rank"][0]) <= 63 and min(out["gap"][0]) >= 0
    # the same run as above: same candidates, same picks, same regret
    np.testing.assert_allclose(out["regret"][0], res.best_so_far + 3.86278)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ndp_trend_tasks_put_the_context_and_queries_where_the_regime_says(monkeypatch):
    """``ndp_trend.py``: 5-12 context points and 50 queries per task, in the regime's
    intervals; the linear-kernel GPR baseline continues a line plus a wiggle, where the
    constant-mean GPR returns to the mean."""
    import numpy as np

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    trend = _load("ndp_trend_under_test", ROOT / "benchmarks" / "ndp_trend.py")
    for regime, ((c_lo, c_hi), (q_lo, q_hi)) in trend.REGIMES.items():
        tasks = trend.tasks("drift", regime, 6, seed=0)
        assert len(tasks) == 6
        for xc, yc, xq, yq in tasks:
            assert 5 <= len(xc) <= 12 and len(yc) == len(xc) and xq.shape == (50, 1)
            assert yq.shape == (50,)
            assert c_lo <= xc.min() and xc.max() <= c_hi
            assert q_lo <= xq.min() and xq.max() <= q_hi
    xc = np.linspace(0, 0.6, 12)[:, None]
    xq = np.linspace(1.0, 2.0, 20)[:, None]

    def f(x):
        return 3 * x[:, 0] + 0.2 * np.sin(20 * x[:, 0])

    const = trend.gpr_metrics(xc, f(xc), xq, f(xq), linear=False)
    line = trend.gpr_metrics(xc, f(xc), xq, f(xq), linear=True)
    assert line[1] < 0.1 and const[1] > 10  # MSE; measured 0.04 and 13.9


def test_defaults_page_notes_stay_on_one_table_line():
    """A multi-line warning recorded with a row becomes one line of its table cell."""
    render = _load("_defaults_render_under_test", ROOT / "benchmarks" / "_defaults_render.py")
    row = {"skdiff": {"extra": {"epochs": 3}},
           "warnings": ["ConvergenceWarning: lbfgs failed to converge (status=1):\nSTOP: TOTAL"]}
    assert render._notes(row) == ("3 epochs; warns ConvergenceWarning: lbfgs failed to "
                                  "converge (status=1): STOP: TOTAL")
    # a forecaster's row says whether its forecast is the ridge skip alone
    for used, note in ((False, "ridge skip alone"), (True, "ridge skip + encoder's correction")):
        row = {"skdiff": {"extra": {"epochs": 3, "encoder_used": used}}}
        assert render._notes(row) == f"3 epochs; {note}"


def test_defaults_page_lists_the_runs_its_rows_come_from():
    render = _load("_defaults_render_under_test", ROOT / "benchmarks" / "_defaults_render.py")
    run = {"date": "d", "skdiff": "0.1", "hardware": "cpu", "threads": 1, "loadavg_start": 1}
    doc = {"runs": [{**run, "command": "python first"}, {**run, "command": "python second"}],
           "rows": []}
    page = render.render(doc)
    assert "python first" not in page and "python second" not in page
    doc["rows"] = [{"run": 1, "estimator": "none of the estimators"}]
    page = render.render(doc)
    assert "python first" not in page and "`python second`" in page


def test_ndp_input_map_summary_reads_the_chosen_cap_and_records_partial_runs(monkeypatch,
                                                                            tmp_path):
    """``ndp_input_map.py``'s summary: means over the seeds per variant, 'auto' counted per
    chosen cap; a run writes its file as incomplete until its last task."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("ndp_input_map_under_test", ROOT / "benchmarks" / "ndp_input_map.py")
    common = sys.modules["_ndp_common"]

    def metrics(ll):
        return {"loglik": ll, "mse": -ll, "context_rms": 0.1}

    rows = [{"function": "sinlin", "split": "dev", "seed": s, "chosen": cap,
             "metrics": {"1": metrics(0.0), "3": metrics(1.0 + s), "auto": metrics(1.0 + s)}}
            for s, cap in ((0, 3.0), (1, 3.0))]
    out = script.summary(rows)["sinlin"]
    assert out["seeds"] == 2 and out["split"] == "dev"
    assert out["variants"]["3"]["loglik"] == 1.5 and out["variants"]["3"]["loglik_se"] == 0.5
    assert out["variants"]["chosen"] == {"1": 0, "2": 0, "3": 2, "5": 0, "10": 0}
    path = tmp_path / "r.json"
    common.write_json(path, {"rows": rows}, complete=False)
    assert json.loads(path.read_text())["complete"] is False
    common.write_json(path, {"rows": rows})
    assert json.loads(path.read_text())["complete"] is True


def test_small_tables_scores_the_rows_each_protocol_promises(monkeypatch):
    """``difformer_small_tables.py``: the supervised protocol scores up to 1,000 rows outside
    the training draw; the semi-supervised one fits the whole pool (all rows of a smaller
    table), the first ``n_rows`` labelled, and scores ``transduction_`` on the others; the
    ridge fits the labelled rows only."""
    import numpy as np

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("difformer_small_tables_under_test",
                   ROOT / "benchmarks" / "difformer_small_tables.py")
    seen = []

    class Recorded(script.DIFFormerRegressor):
        def fit(self, X, y):
            seen.append((len(X), int(np.isfinite(y).sum())))
            return super().fit(X, y)

    monkeypatch.setattr(script, "DIFFormerRegressor",
                        lambda **kw: Recorded(max_epochs=2, hidden_dim=8, n_layers=1, **kw))
    X, y = script.table("diabetes")  # 442 rows
    out, kept, _ = script.run(X, y, 30, 0)
    assert seen == [(30, 30), (30, 30)] and isinstance(kept, bool)
    out_pool, _, _ = script.run(X, y, 30, 0, pool=1000)
    assert seen[2:] == [(442, 30), (442, 30)]
    # the same 30 labelled rows in both protocols: the same ridge, scored on other rows
    rows = np.random.RandomState(script.SEED).permutation(len(y))
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
    ridge.fit(X[rows[:30]], y[rows[:30]])
    rest = rows[30:]
    assert out_pool["ridge"] == pytest.approx(np.mean((ridge.predict(X[rest]) - y[rest]) ** 2))
    assert out["ridge"] == pytest.approx(out_pool["ridge"])  # 412 other rows either way


def test_defaults_set_measures_other_parameters_into_a_file_of_their_own(monkeypatch, tmp_path,
                                                                         capsys):
    """``defaults.py --set``: the estimators are built with the given parameters, each row
    records them, and the defaults' own results file and page are refused."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("defaults_under_test", ROOT / "benchmarks" / "defaults.py")
    for argv, message in (
            (["--set", "weight_averaging=True"], "pass a --json of its own"),
            (["--set", "weight_averaging", "--json", str(tmp_path / "x.json")],
             "--set expects KEY=VALUE, got 'weight_averaging'"),
            (["--set", "kernel=simple", "--json", str(tmp_path / "x.json")],
             "'simple' is not a Python literal")):
        with pytest.raises(SystemExit):
            script.main(argv)
        assert message in capsys.readouterr().err
    ds = next(d for d in script.DATASETS if d.name == "iris, all labelled")
    ctx = script.Context(data_home=None, quick=True)
    row = script.run_row(ds, ctx, {"max_epochs": 4, "n_layers": 1})
    assert row["params"] == {"max_epochs": 4, "n_layers": 1}
    assert row["skdiff"]["extra"]["epochs"] == 4
    assert "params" not in script.run_row(ds, ctx)
    # --reuse-baselines: a stored record's baselines are taken, not fitted again
    stored = {"baselines": {"logreg": {"score": 0.5}}}
    monkeypatch.setattr(script, "baselines", lambda task, d: pytest.fail("refitted"))
    reused = script.run_row(ds, ctx, {"max_epochs": 4, "n_layers": 1}, stored)
    assert reused["baselines_reused"] and reused["baselines"] == stored["baselines"]
    assert reused["best_baseline"] == "logreg" and reused["baseline_score"] == 0.5
    assert reused["ratio"] == pytest.approx(reused["skdiff"]["score"] / 0.5)


def test_defaults_rerun_row_keeps_its_place_in_the_results_file(monkeypatch):
    """A re-run row replaces its earlier result in place; a new row goes at the end (so a
    partial re-run rewrites only its own rows of the results file)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("defaults_under_test", ROOT / "benchmarks" / "defaults.py")
    rows = [{"key": k, "score": 0} for k in "abc"]
    script._place(rows, {"key": "b", "score": 1})
    script._place(rows, {"key": "d", "score": 2})
    assert [(r["key"], r["score"]) for r in rows] == [("a", 0), ("b", 1), ("c", 0), ("d", 2)]


def test_a_reliability_update_replaces_an_earlier_run_of_the_same_selection(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    rel = _load("_reliability_under_test", ROOT / "benchmarks" / "reliability.py")
    a = "python benchmarks/reliability.py --workers 2 --update --only partial_fit warm_start"
    b = "python benchmarks/reliability.py --update --only warm_start partial_fit --workers 2"
    assert rel._selection(a) == rel._selection(b) == ("partial_fit", "warm_start")
    assert rel._selection("python benchmarks/reliability.py --update --bad --only x") == ()
    assert rel._selection("python benchmarks/reliability.py --workers 2") == ()
    monkeypatch.setattr(rel, "collect", lambda: [])
    meta = {"updates": [{"command": a, "date": "d", "n_probes": 46, "wall_s": 1},
                        {"command": "python benchmarks/reliability.py --update --only x",
                         "date": "d", "n_probes": 1, "wall_s": 1}]}
    monkeypatch.setattr(rel, "command", lambda script, argv: b)
    merged = rel._merge({"meta": meta, "probes": []}, [], [], 1.0)
    assert [u["command"] for u in merged["meta"]["updates"]] == [meta["updates"][1]["command"], b]


def test_defaults_sequence_regression_task_scores_the_estimator_and_its_baselines(monkeypatch):
    """The ``seq_reg`` task: one value per series, scored by MSE against ridge and gradient
    boosting on the flattened series and the training mean, each computed by hand here."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("defaults_under_test", ROOT / "benchmarks" / "defaults.py")
    import numpy as np
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.utils import Bunch

    from skdiff import FlowformerRegressor

    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 12, 2))
    y = X[:, -3:, 0].sum(1) - 0.5 * X[:, :, 1].mean(1) + 0.1 * rng.normal(size=120)
    d = Bunch(X_train=X[:90], y_train=y[:90], X_test=X[90:], y_test=y[90:])
    task = script.TASKS["seq_reg"]
    flat = lambda a: a.reshape(len(a), -1)  # noqa: E731
    ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
    expected_ridge = np.mean((ridge.fit(flat(d.X_train), d.y_train).predict(flat(d.X_test))
                              - d.y_test) ** 2)
    assert task.baselines["ridge"](d)["score"] == pytest.approx(expected_ridge)
    assert task.baselines["training_mean"](d)["score"] == pytest.approx(
        np.mean((d.y_test - d.y_train.mean()) ** 2))
    # the signal is linear in the window: ridge far below the mean, and the estimator's
    # ridge skip with it (max_epochs=2 keeps the call short)
    assert task.estimator == "FlowformerRegressor"
    skdiff_mse = task.call(lambda **kw: FlowformerRegressor(max_epochs=2, **kw), d)["score"]
    assert expected_ridge < 0.2 * task.baselines["training_mean"](d)["score"]
    assert skdiff_mse < 2 * expected_ridge


def test_defaults_seeds_refits_a_row_with_each_seed_against_the_stored_baseline(monkeypatch,
                                                                               tmp_path):
    """``defaults_seeds.py`` fits the row's estimator with random_state 0..seeds-1 through
    the row's own call, and scores each fit against the baseline of the defaults results
    file it is given (not recomputed); its results file records the command without
    machine paths."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = _load("defaults_seeds_under_test", ROOT / "benchmarks" / "defaults_seeds.py")
    D = sys.modules["defaults"]
    from skdiff import DIFFormerClassifier

    seeds_seen = []

    def quick(**params):
        seeds_seen.append(params["random_state"])
        return DIFFormerClassifier(**{**params, "max_epochs": 3, "n_layers": 1,
                                      "hidden_dim": 8})

    monkeypatch.setattr(D, "_estimator", lambda name: quick)
    key = "DIFFormerClassifier | tabular | iris, all labelled"
    stored = tmp_path / "defaults.json"
    stored.write_text(json.dumps({"runs": [], "rows": [
        {"key": key, "best_baseline": "logreg", "baseline_score": 0.5}]}))
    out = tmp_path / "seeds.json"
    script.main(["--rows", "iris, all labelled", "--seeds", "2", "--baselines", str(stored),
                 "--json", str(out)])
    doc = json.loads(out.read_text())
    assert doc["complete"] and "PATH" in doc["command"] and str(tmp_path) not in doc["command"]
    (row,) = doc["rows"]
    assert row["key"] == key and row["baseline"] == "logreg" and row["seeds"] == 2
    # each fit once plain and once in a StandardScaler pipeline (the row's call)
    assert sorted(set(seeds_seen)) == [0, 1]
    assert row["ratios"] == pytest.approx([s / 0.5 for s in row["scores"]])
    assert row["losses"] == sum(s < 0.5 * 0.99 for s in row["scores"])
    assert "params" not in row
    # --set builds every fit with a candidate parameter, recorded on the row
    params_seen = []
    monkeypatch.setattr(D, "_estimator", lambda name: lambda **p: (
        params_seen.append(p), quick(**p))[1])
    script.main(["--rows", "iris, all labelled", "--seeds", "1", "--baselines", str(stored),
                 "--set", "logistic_start=True", "--json", str(out)])
    (row,) = json.loads(out.read_text())["rows"]
    assert row["params"] == {"logistic_start": True}
    assert params_seen and all(p["logistic_start"] is True for p in params_seen)
    with pytest.raises(SystemExit):
        script.main(["--set", "logistic_start", "--json", str(out)])
