"""The benchmark pages' directive reads what the benchmark scripts write.

Every result file under ``benchmarks/results`` that a claim of ``docs/_ext/skdiff_benchmarks.py``
names must render through that claim's table (a script and the directive that disagree on the
fields would otherwise only show up as a warning in the docs build), and the NDP scripts' common
writer must record the run without machine paths.
"""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("sphinx", reason="the docs extension needs sphinx (pip install skdiff[docs])")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _load("skdiff_benchmarks", ROOT / "docs" / "_ext" / "skdiff_benchmarks.py")
PRESENT = sorted(k for k, c in bench.CLAIMS.items() if (bench.RESULTS / c.file).is_file())


@pytest.mark.parametrize("key", PRESENT)
def test_every_result_file_renders_through_its_claim(key):
    claim = bench.CLAIMS[key]
    doc = json.loads((bench.RESULTS / claim.file).read_text())
    header, rows = claim.table(doc)
    # a file shared by several claims may not hold rows for all of them yet (the page
    # then says "not yet measured" for that one); a file of its own must
    shared = sum(c.file == claim.file for c in bench.CLAIMS.values()) > 1
    assert rows or shared, f"{claim.file} renders no row"
    assert all(len(r) == len(header) for r in rows), (header, rows)
    # the command as run from the repository root: no absolute (machine) path in it
    assert not [t for t in doc.get("command", "").split() if t.startswith("/")]


def test_bayes_opt_table_reads_regret_after_k_iterations_and_draws_the_curve():
    # regret[seed, evaluation]: 3 initial points, then 30 iterations; the value after k
    # iterations is column 2 + k
    regret = np.tile(np.arange(33, 0, -1, dtype=float), (4, 1))
    regret[1] += 1.0  # seeds differ by 1 in one run: standard error 0.25
    doc = {"args": {"n_iter": 30}, "n_init": 3, "seconds_per_run": {"ndp": 2.0},
           "regret": {"ndp": regret.tolist()}}
    header, rows = bench._bayes_opt(doc)
    assert header[2:5] == ["regret after 10", "regret after 20", "regret after 30"]
    assert rows[0][1] == "4"
    assert rows[0][2:5] == ["21.250 ± 0.250", "11.250 ± 0.250", "1.250 ± 0.250"]
    image = bench._bayes_opt_figure(doc)
    assert image["uri"].startswith("data:image/svg+xml;base64,")
    # a short run (15 iterations) reads the early iterations, where a prior's knowledge shows
    doc["args"]["n_iter"] = 15
    header, rows = bench._bayes_opt({**doc, "regret": {"ndp": regret[:, :18].tolist()}})
    assert header[2:7] == [f"regret after {k}" for k in (1, 3, 5, 10, 15)]
    assert rows[0][2] == "30.250 ± 0.250"  # column 2 + 1


def test_ndp_ceiling_marks_the_analytic_row_with_the_papers_figure():
    prior = "gp prior's Bayes posterior"
    doc = {"rows": [{"kernel": "se", "n_samples": None, "loglik": 0.717, "se": 0.01},
                    {"kernel": "se", "n_samples": 1024, "loglik": 0.704, "se": 0.01},
                    {"kernel": "se", "posterior": prior, "n_samples": None, "loglik": 0.235,
                     "se": 0.013}]}
    _, rows = bench._ndp_ceiling(doc)
    assert rows == [["se", "exact GP", "analytic", "0.717 ± 0.010", "0.71"],
                    ["se", "exact GP", "1,024", "0.704 ± 0.010", "–"],
                    ["se", prior, "analytic", "0.235 ± 0.013", "–"]]


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
