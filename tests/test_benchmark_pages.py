"""The benchmark pages' directive reads what the benchmark scripts write.

Every result file under ``benchmarks/results`` that a claim of ``docs/_ext/skdiff_benchmarks.py``
names must render through that claim's table (a script and the directive that disagree on the
fields would otherwise only show up as a warning in the docs build). The scripts' own helpers,
which need no sphinx, are tested in ``test_benchmark_scripts.py``.
"""

import json

import numpy as np
import pytest

from .test_benchmark_scripts import ROOT, _load

pytest.importorskip("sphinx", reason="the docs extension needs sphinx (pip install skdiff[docs])")


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
