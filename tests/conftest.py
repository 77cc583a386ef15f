"""Shared fixtures: one torch thread, and where the real data sets are.

The real files are looked up in :func:`skdiff.datasets.get_data_home` (``$SKDIFF_DATA``, else
``~/skdiff_data``: where ``fetch_*`` download). Setting ``SKDIFF_TEST_HIDE_DATA=1`` hides them
all, which runs the suite as on a fresh clone without data: the tests that need the files
skip, everything else must pass.
"""

import os

import pytest
import torch

from skdiff.datasets import get_data_home

# One intra-op thread for the whole suite: its models are small (one thread is as fast here),
# and on a busy runner two OpenMP threads competing for a core made the suite many times slower.
torch.set_num_threads(1)

HIDE_ENV = "SKDIFF_TEST_HIDE_DATA"
PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


def _real_data(files, shown, fetch_call):
    """The first folder holding all ``files`` (relative paths), or skip saying how to get them."""
    hidden = bool(os.environ.get(HIDE_ENV))
    for home in () if hidden else (get_data_home(),):
        if all((home / f).is_file() for f in files):
            return home
    where = (f"real data hidden by {HIDE_ENV}=1 (unset it to use the files)" if hidden else
             f"{shown} not found in $SKDIFF_DATA (else ~/skdiff_data)")
    pytest.skip(
        f"{where}. Download it with python -c \"import skdiff.datasets as d; d.{fetch_call}\" "
        f"(into $SKDIFF_DATA, else ~/skdiff_data), or set SKDIFF_DATA to a folder that holds "
        f"{shown}."
    )


@pytest.fixture(scope="package")
def cora_home():
    return _real_data([f"planetoid/ind.cora.{p}" for p in PLANETOID_PARTS],
                      "planetoid/ind.cora.*", "fetch_planetoid('cora')")


@pytest.fixture(scope="package")
def ett_home():
    return _real_data(["ett/ETTh1.csv"], "ett/ETTh1.csv", "fetch_ett('ETTh1')")
