"""Shared fixtures: where the real data lives (the project's shared/ folder, never copied)."""

from pathlib import Path

import pytest

DATA_HOME = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_home():
    if not (DATA_HOME / "planetoid").is_dir():
        pytest.skip(f"real data not found at {DATA_HOME}")
    return DATA_HOME
