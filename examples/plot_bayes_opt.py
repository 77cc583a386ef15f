"""Bayesian optimisation with NDP Thompson sampling (no retraining between iterations).

Minimise the 3-D Hartmann function on the unit cube, starting from 3 random points. At each
iteration ``thompson_sampling`` conditions the pretrained 3-D NDP prior on all evaluations so
far (``fit`` only stores the context), draws one joint posterior sample on 64 random candidates
and evaluates the objective at the sample's minimum. Random search runs alongside.

Run: ``python examples/bayes_opt.py`` (needs the shipped 3-D prior; a minute or two on CPU).
"""

import numpy as np

from skdiff import NDPRegressor
from skdiff.bayes_opt import HARTMANN3_MIN, hartmann3, thompson_sampling

bounds = [(0.0, 1.0)] * 3
ndp = NDPRegressor(x_bounds=bounds, n_samples=2, random_state=0)
res = thompson_sampling(hartmann3, bounds, model=ndp, n_iter=20, random_state=0, verbose=1)
rnd = thompson_sampling(hartmann3, bounds, model="random", n_iter=20, random_state=0)
print(f"NDP Thompson sampling: best {res.y_best:.3f} at {np.round(res.x_best, 3)}; "
      f"regret {res.y_best - HARTMANN3_MIN:.3f}")
print(f"random search:         best {rnd.y_best:.3f}; regret {rnd.y_best - HARTMANN3_MIN:.3f}")
