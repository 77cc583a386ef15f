"""Root conftest: the doctests of skdiff/ (run with --doctest-modules) use one torch thread."""

import torch

torch.set_num_threads(1)
