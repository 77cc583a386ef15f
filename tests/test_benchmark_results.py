"""The benchmark results files and the docs tables read from them agree.

``benchmarks/_results.py`` writes the header of every results file (command, date,
environment); ``docs/_ext/skdiff_benchmarks.py`` renders each claim's table from its file.
A results file whose rows the claim cannot read would otherwise surface only as a warning in
the docs build.
"""

import datetime
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(path):
    """A module from a file outside the package, without touching ``sys.path``."""
    name = f"_skdiff_test_{path.stem}"  # registered: dataclasses look their module up
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pytest.importorskip("sphinx")  # the docs extension needs sphinx and docutils
_results = _load(ROOT / "benchmarks" / "_results.py")
skdiff_benchmarks = _load(ROOT / "docs" / "_ext" / "skdiff_benchmarks.py")

PRESENT = sorted(k for k, c in skdiff_benchmarks.CLAIMS.items()
                 if (skdiff_benchmarks.RESULTS / c.file).is_file())


@pytest.fixture(autouse=True)
def _no_thread_flag(monkeypatch):
    """Commands are compared as typed; a set OMP_NUM_THREADS would be recorded in front."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


def test_command_records_the_data_home_as_the_environment_variable():
    cmd = _results.command("cora.py", ["--data-home", "/some/machine/path", "--seeds", "3",
                                       "--note", "two words"])
    assert cmd == "python benchmarks/cora.py --data-home $SKDIFF_DATA --seeds 3 " \
                  "--note 'two words'"
    assert _results.command("x.py", ["--data-home=/p"]) == \
        "python benchmarks/x.py --data-home=$SKDIFF_DATA"


def test_header_fields_and_atomic_write(tmp_path):
    doc = _results.header("digits.py", threads=1, note="shared", argv=["--draws", "2"])
    assert doc["command"] == "python benchmarks/digits.py --draws 2"
    assert datetime.datetime.fromisoformat(doc["date"]).tzinfo is not None
    env = doc["environment"]
    assert env["threads"] == 1 and env["note"] == "shared" and env["device"] == "cpu"
    assert env["device_name"] and env["torch"]
    assert doc["complete"] is False
    path = tmp_path / "sub" / "r.json"
    _results.write_json(path, {**doc, "rows": [{"x": 1.5}]})
    assert json.loads(path.read_text())["complete"] is False  # a run still going
    _results.write_json(path, {**doc, "rows": [{"x": 1.5}]}, complete=True)
    written = json.loads(path.read_text())
    assert written["rows"] == [{"x": 1.5}] and written["complete"] is True
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary file left


@pytest.mark.parametrize("key", PRESENT)
def test_committed_results_render(key):
    claim = skdiff_benchmarks.CLAIMS[key]
    doc = json.loads((skdiff_benchmarks.RESULTS / claim.file).read_text())
    header, rows = claim.table(doc)
    assert all(len(r) == len(header) for r in rows)
    if "command" in doc:  # what the page shows as the command: no machine paths
        assert "python benchmarks/" in doc["command"]
    for cmd in _commands(doc):  # the file's own and those of its runs and rows
        assert not [t for t in cmd.split() if t.startswith("/") or "=/" in t], cmd


def _commands(doc):
    """Every ``command`` string anywhere in a results document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in ("command", "source_command") and isinstance(v, str):
                yield v
            else:
                yield from _commands(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _commands(v)


def test_cora_table_puts_the_paper_beside_each_difformer_row():
    doc = {"rows": [
        {"model": "DIFFormer-s", "split": "public", "accuracy": [0.8, 0.82], "seconds": 12.0},
        {"model": "LabelSpreading", "split": "public", "accuracy": [0.713], "seconds": 0.5,
         "alpha": 0.9}]}
    header, rows = skdiff_benchmarks.CLAIMS["cora"].table(doc)
    assert header[2:4] == ["test accuracy (%)", "paper (%)"]
    assert rows[0] == ["public Planetoid", "DIFFormer-s", "81.0 ± 1.4 (2 runs)", "85.9 ± 0.4",
                       "12.0"]
    assert rows[1] == ["public Planetoid", "LabelSpreading (alpha=0.9 on validation)", "71.3",
                       "–", "0.5"]


def test_hardware_line_says_when_the_machine_was_loaded():
    env = {"device_name": "CPU X, 2 cores", "torch": "2.0", "threads": 1, "cpu_count": 2}
    render = skdiff_benchmarks._environment
    assert render({"environment": {**env, "loadavg": 0.3}}) == \
        "CPU X, 2 cores, torch 2.0, 1 thread(s), load average 0.3 at the start"
    assert render({"environment": {**env, "loadavg": 8.1}}).endswith(
        "load average 8.1 at the start; other jobs shared the CPU: timings are indicative")
    assert render({"environment": {**env, "loadavg": 8.1, "note": "shared"}}).endswith(
        "at the start; shared")


@pytest.mark.parametrize("path", sorted(skdiff_benchmarks.RESULTS.glob("*.json")),
                         ids=lambda p: p.name)
def test_no_results_file_records_a_machine_path(path):
    doc = json.loads(path.read_text())
    for cmd in _commands(doc):
        assert not [t for t in cmd.split() if t.startswith("/") or "=/" in t], cmd
    # nor anywhere else, e.g. a path argument among the recorded ``args``
    assert not [s for s in _strings(doc) if s.startswith("/")]


def _strings(doc):
    """Every string value anywhere in a results document."""
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from _strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _strings(v)
