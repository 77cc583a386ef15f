"""The code of the user guide's pages runs as written.

A page is read top to bottom, so each page's ```python blocks run in order in one namespace,
from a temporary working directory. Two blocks run with a stand-in:

- graphs.md's PyTorch Geometric block gets a ``data`` object with the attributes
  :func:`skdiff.datasets.from_pyg` reads (torch_geometric is not a dependency);
- ndp.md's prior training runs 1 epoch of 5 steps instead of 4 of 250 (minutes on a CPU),
  which checks its calls, files and shapes, not the trained prior.

docs/scaling.md needs a cluster and the reader's own data; it is not run here.
"""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import sklearn
import torch

import skdiff.diffusion
from skdiff.datasets import make_planted_partition

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "user_guide"
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
PAGES = sorted(p.name for p in GUIDE.glob("*.md") if FENCE.search(p.read_text()))


def _pyg_like_data():
    """What from_pyg reads of a torch_geometric Data: x, edge_index, y, train_mask."""
    X, y, A = make_planted_partition(120, 3, p_in=0.1, p_out=0.01, random_state=0)
    rows, cols = A.nonzero()
    train = torch.zeros(120, dtype=torch.bool)
    train[::4] = True
    edge_index = torch.as_tensor(np.vstack([rows, cols]))
    return SimpleNamespace(x=torch.as_tensor(X), edge_index=edge_index, y=torch.as_tensor(y),
                           train_mask=train)


def test_the_pages_have_code():
    assert {"difformer.md", "flowformer.md", "graphs.md", "ndp.md", "sequences.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_page_runs(page, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    train_prior = skdiff.diffusion.train_prior
    monkeypatch.setattr(skdiff.diffusion, "train_prior", lambda *a, **k: train_prior(
        *a, **{**k, "max_epochs": 1, "steps_per_epoch": 5}))
    namespace = {"__name__": "__page__", "data": _pyg_like_data()}
    text = (GUIDE / page).read_text()
    with sklearn.config_context():  # a page that changes the global config cannot leak it
        for match in FENCE.finditer(text):
            line = text[: match.start()].count("\n") + 2
            exec(compile(match.group(1), f"{page}:{line}", "exec"), namespace)
