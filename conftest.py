"""Root conftest: names available to the doctests in skdiff/ (run with --doctest-modules)."""

from pathlib import Path

import pytest

DATA_HOME = Path(__file__).resolve().parent.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _doctest_data_home(doctest_namespace):
    doctest_namespace["DATA_HOME"] = DATA_HOME
