"""Shared fixtures: where the real data lives (the project's shared/ folder, never copied)."""

from pathlib import Path

import pytest
import torch

# One intra-op thread for the whole suite: its models are small (one thread is as fast here),
# and on a busy runner two OpenMP threads competing for a core made the suite ~9x slower
# (14.5 min instead of 1.6, measured with another job on one of the two cores).
torch.set_num_threads(1)

DATA_HOME = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_home():
    if not (DATA_HOME / "planetoid").is_dir():
        pytest.skip(f"real data not found at {DATA_HOME}")
    return DATA_HOME
