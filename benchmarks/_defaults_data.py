"""Data of the defaults benchmark (``benchmarks/defaults.py``): one loader per data source.

Every loader returns a :class:`sklearn.utils.Bunch` of plain arrays in the layout its task
kind expects (see ``benchmarks/_defaults_tasks.py``):

* ``clf_semi`` / ``reg_semi``: ``X``, ``y`` (true values), ``y_fit`` (classification: ``-1``
  for unlabelled rows; regression: ``NaN``), ``scored`` (boolean mask of the unlabelled rows);
* ``clf_full`` / ``reg_full``: ``X_train``, ``y_train``, ``X_test``, ``y_test``;
* ``graph_clf`` / ``graph_reg``: ``X``, ``A`` (scipy CSR), ``y``, ``y_fit``, ``scored``;
* ``forecast``: ``X_train``, ``y_train``, ``X_test``, ``y_test`` (lag windows of a series
  standardised with its training part), ``season`` (period for the seasonal naive forecast,
  1 = none);
* ``series_clf``: ``X_train``, ``y_train``, ``X_test``, ``y_test`` with ``X`` of shape
  (n, length, channels), skdiff's layout;
* ``function``: ``tasks``, a list of (x_context, y_context, x_query, y_query) in the data's
  own units, and ``unit`` = (offset, scale) mapping ``y`` to the natural scale of the
  function (``(y - offset) / scale``), where metrics are reported.

All randomness is seeded, so every run sees the same data.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch

from skdiff.datasets import (
    load_ett,
    load_planetoid,
    make_gp_functions,
    make_label_mask,
    make_planted_partition,
    make_windows,
)

#: Seed of every label mask and train/test split drawn here.
SEED = 0


# -- tabular ---------------------------------------------------------------------------------
def _tabular_xy(name):
    """(X, y, is_classification) of a bundled scikit-learn set or a seeded generator."""
    from sklearn import datasets as ds

    bundled = {"digits": ds.load_digits, "wine": ds.load_wine, "iris": ds.load_iris,
               "breast_cancer": ds.load_breast_cancer, "diabetes": ds.load_diabetes}
    if name in bundled:
        X, y = bundled[name](return_X_y=True)
        return X.astype(np.float64), y, name != "diabetes"
    if name == "blobs3":  # 3 classes, 5 informative of 20 features, 2 clusters per class
        X, y = ds.make_classification(n_samples=1000, n_features=20, n_informative=5,
                                      n_redundant=5, n_classes=3, n_clusters_per_class=2,
                                      random_state=101)
        return X, y, True
    if name == "blobs4":  # 4 classes, 10 informative of 40 features, 5 % label noise
        X, y = ds.make_classification(n_samples=2000, n_features=40, n_informative=10,
                                      n_redundant=10, n_classes=4, flip_y=0.05,
                                      class_sep=0.8, random_state=202)
        return X, y, True
    if name == "circles":  # two noisy concentric circles, 2 features
        X, y = ds.make_circles(n_samples=1000, noise=0.1, factor=0.5, random_state=404)
        return X, y, True
    if name == "moons":  # two interleaving half circles, 2 features
        X, y = ds.make_moons(n_samples=1000, noise=0.3, random_state=505)
        return X, y, True
    if name == "hastie":  # 10 Gaussian features, class: sum of squares above 9.34
        X, y = ds.make_hastie_10_2(n_samples=1000, random_state=606)
        return X, (y > 0).astype(int), True
    if name in STATSMODELS_TABULAR:  # real survey and economic data bundled with statsmodels
        return (*_statsmodels_tabular(name), False)
    if name == "friedman1":  # 5 informative of 10 features, noise std 1
        X, y = ds.make_friedman1(n_samples=1000, n_features=10, noise=1.0, random_state=303)
        return X, y, False
    if name == "friedman3":  # arctan of a ratio of 4 features, noise std 0.1
        X, y = ds.make_friedman3(n_samples=1000, noise=0.1, random_state=707)
        return X, y, False
    if name == "quantiles":  # 3 classes: shells of a 4-D Gaussian by radius
        X, y = ds.make_gaussian_quantiles(n_samples=1000, n_features=4, n_classes=3,
                                          random_state=808)
        return X, y, True
    raise ValueError(f"unknown tabular data set {name!r}")


#: Regression tables bundled with statsmodels: name -> (loader, target, rows kept[, other
#: columns dropped]).
STATSMODELS_TABULAR = {"fair": ("fair", "affairs", 3000), "star98": ("star98", None, None),
                       "anes96": ("anes96", "PID", None),
                       "statecrime": ("statecrime", "violent", None),
                       "randhie": ("randhie", "mdvis", 3000),
                       "modechoice": ("modechoice", "invc", None, ("individual", "mode")),
                       "grunfeld": ("grunfeld", "invest", None, ("firm",))}


def _statsmodels_tabular(name):
    """(X, y) of a bundled statsmodels table: Fair's affairs (first 3000 rows), the share of
    pupils above the national median per district (star98), party identification (anes96),
    violent crimes per 100,000 people in the 50 states and DC (statecrime), outpatient visits
    in the RAND health insurance experiment (randhie, first 3000 rows), the in-vehicle cost
    of a trip by the travel mode chosen (modechoice), a firm's gross investment from its
    market value, capital stock and the year (grunfeld: 11 US firms, 1935-1954)."""
    import statsmodels.datasets as smd

    module, target, n_rows, *drop = STATSMODELS_TABULAR[name]
    df = getattr(smd, module).load_pandas().data.iloc[:n_rows]
    if name == "star98":
        y = df["NABOVE"] / (df["NABOVE"] + df["NBELOW"])
        X = df.drop(columns=["NABOVE", "NBELOW"])
    else:
        y, X = df[target], df.drop(columns=[target, *(drop[0] if drop else ())])
    return X.to_numpy(np.float64), y.to_numpy(np.float64)


def tabular_semi(ctx, name, n_labelled):
    """All rows, ``n_labelled`` labels per class (classification) or in all (regression)."""
    X, y, is_clf = _tabular_xy(name)
    if is_clf:
        y_fit = make_label_mask(y, n_labelled, random_state=SEED)
        scored = y_fit == -1
    else:
        keep = np.random.RandomState(SEED).choice(len(y), n_labelled, replace=False)
        y_fit = np.full(len(y), np.nan)
        y_fit[keep] = y[keep]
        scored = np.isnan(y_fit)
    return Bunch(X=X, y=y, y_fit=y_fit, scored=scored)


def tabular_full(ctx, name):
    """A fixed 75/25 train/test split (stratified for classification)."""
    X, y, is_clf = _tabular_xy(name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=SEED,
                                          stratify=y if is_clf else None)
    return Bunch(X_train=Xtr, y_train=ytr, X_test=Xte, y_test=yte)


# -- graphs ----------------------------------------------------------------------------------
def cora(ctx):
    """Cora, raw binary bag-of-words features, the public split's 140 training labels only
    (the validation labels are not given), scored on the 1000 public test nodes."""
    data = load_planetoid("cora", data_home=ctx.data_home)
    y_fit = np.full(data.target.shape, -1)
    y_fit[data.train_idx] = data.target[data.train_idx]
    scored = np.zeros(len(y_fit), dtype=bool)
    scored[data.test_idx] = True
    return Bunch(X=data.data, A=data.adjacency, y=data.target, y_fit=y_fit, scored=scored)


def _block_graph(n_nodes, n_classes, homophily, avg_degree, random_state):
    """Classes and graph of a planted partition whose expected degree is ``avg_degree`` and
    whose expected fraction of edges inside a class is ``homophily``."""
    block = n_nodes / n_classes
    p_in = homophily * avg_degree / (block - 1)
    p_out = (1 - homophily) * avg_degree / (n_nodes - block)
    _, y, A = make_planted_partition(n_nodes, n_classes, p_in=p_in, p_out=p_out,
                                     n_features=1, random_state=random_state)
    return y, A


def make_csbm(n_nodes, *, n_classes=5, homophily=0.8, avg_degree=8.0, snr=1.0,
              n_informative=16, n_noise=16, random_state=0):
    """A contextual stochastic block model with a homophily and a feature signal knob.

    The graph is :func:`skdiff.datasets.make_planted_partition` with the block probabilities
    set so that the expected degree is ``avg_degree`` and the expected fraction of edges
    inside a class is ``homophily`` (``1 / n_classes`` is a graph blind to the classes; below
    it the graph is heterophilous). Features: ``n_informative`` columns of a class mean plus
    standard normal noise, the class means drawn as N(0, snr^2 / n_informative) per entry (so
    two class means lie about ``snr * sqrt(2)`` noise standard deviations apart), then
    ``n_noise`` columns of pure noise.

    Returns
    -------
    X : ndarray of shape (n_nodes, n_informative + n_noise)
    y : ndarray of shape (n_nodes,)
    A : scipy.sparse.csr_matrix of shape (n_nodes, n_nodes)
    """
    y, A = _block_graph(n_nodes, n_classes, homophily, avg_degree, random_state)
    rng = np.random.RandomState(random_state + 1)
    means = rng.normal(scale=snr / np.sqrt(n_informative), size=(n_classes, n_informative))
    X = np.hstack([means[y] + rng.normal(size=(n_nodes, n_informative)),
                   rng.normal(size=(n_nodes, n_noise))])
    return X, y, A


def csbm(ctx, n_nodes, homophily, snr, n_per_class=20, **kwargs):
    """A CSBM node classification task: ``n_per_class`` labels per class, scored on the rest."""
    X, y, A = make_csbm(n_nodes, homophily=homophily, snr=snr, random_state=SEED, **kwargs)
    y_fit = make_label_mask(y, n_per_class, random_state=SEED)
    return Bunch(X=X, A=A, y=y, y_fit=y_fit, scored=y_fit == -1)


def csbm_regression(ctx, n_nodes, homophily, snr, n_labelled=100, seed=SEED, **kwargs):
    """A CSBM node regression task: target = a per-class level (N(0, 1)) plus a linear
    function of the informative features plus noise (std 0.3); ``n_labelled`` random nodes
    labelled, the others ``NaN`` and scored."""
    n_inf = kwargs.get("n_informative", 16)
    X, c, A = make_csbm(n_nodes, homophily=homophily, snr=snr, random_state=seed, **kwargs)
    rng = np.random.RandomState(seed + 2)
    level = rng.normal(size=c.max() + 1)
    w = rng.normal(scale=0.5 / np.sqrt(n_inf), size=n_inf)
    y = level[c] + X[:, :n_inf] @ w + 0.3 * rng.normal(size=n_nodes)
    y_fit = np.full(n_nodes, np.nan)
    keep = rng.choice(n_nodes, n_labelled, replace=False)
    y_fit[keep] = y[keep]
    return Bunch(X=X, A=A, y=y, y_fit=y_fit, scored=np.isnan(y_fit))


def make_bow_sbm(n_nodes, *, n_classes=5, homophily=0.8, avg_degree=4.0, n_words=1000,
                 words_per_node=18, topic=0.3, random_state=0):
    """A block model with binary bag-of-words features, as a citation graph's.

    The graph is :func:`make_csbm`'s (same homophily and degree knobs; the default mean
    degree of 4 is Cora's). Every node draws a Poisson(``words_per_node``) number of words
    (at least one) from a mixture over ``n_words`` words: with probability ``topic`` from
    its class's word distribution, otherwise from one shared by all classes (each
    Dirichlet-drawn, sparse); ``X`` records which words occur (0/1), like the raw features
    of the Planetoid graphs.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_nodes, n_words), float64 0/1
    y : ndarray of shape (n_nodes,)
    A : scipy.sparse.csr_matrix of shape (n_nodes, n_nodes)
    """
    y, A = _block_graph(n_nodes, n_classes, homophily, avg_degree, random_state)
    rng = np.random.RandomState(random_state + 1)
    shared = np.cumsum(rng.dirichlet(np.full(n_words, 0.1)))
    own = np.cumsum(rng.dirichlet(np.full(n_words, 0.05), size=n_classes), axis=1)
    counts = np.maximum(rng.poisson(words_per_node, size=n_nodes), 1)
    node = np.repeat(np.arange(n_nodes), counts)
    u = rng.uniform(size=node.size)
    from_class = rng.uniform(size=node.size) < topic
    word = np.searchsorted(shared, u * shared[-1])
    for c in range(n_classes):  # a loop over the classes; the draws are vectorised
        pick = from_class & (y[node] == c)
        word[pick] = np.searchsorted(own[c], u[pick] * own[c, -1])
    X = sp.csr_matrix((np.ones(node.size), (node, np.minimum(word, n_words - 1))),
                      shape=(n_nodes, n_words))
    X.data[:] = 1.0  # duplicates summed by the constructor: presence, not counts
    return X, y, A


def bow_sbm(ctx, n_nodes, homophily, n_per_class=20, **kwargs):
    """A bag-of-words block model node classification task: ``n_per_class`` labels per
    class, scored on the rest."""
    X, y, A = make_bow_sbm(n_nodes, homophily=homophily, random_state=SEED, **kwargs)
    y_fit = make_label_mask(y, n_per_class, random_state=SEED)
    return Bunch(X=X, A=A, y=y, y_fit=y_fit, scored=y_fit == -1)


def graph_homophily(y, A):
    """Fraction of edges joining two nodes of the same class."""
    A = sp.coo_matrix(A)
    return float(np.mean(y[A.row] == y[A.col])) if A.nnz else float("nan")


# -- series ----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=2)
def _ett(data_home):
    return load_ett("ETTh1", data_home=data_home, as_frame=False)


def ett(ctx, column, horizon, lookback=96, train_stride=2):
    """ETTh1, one column as a univariate series, the standard 12/4/4-month split.

    The series is standardised with the 12 training months. The estimator and the baselines
    fit on the windows of the first 16 months (training and validation months: early
    stopping and penalty choice happen inside, on the latest windows), every
    ``train_stride``-th window; the test windows are every window whose targets lie in the
    4 test months (their inputs may reach back into the validation months).
    """
    data = _ett(str(ctx.data_home) if ctx.data_home is not None else None)
    col = data.feature_names.index(column)
    s = data.data[:, col]
    tr, va, te = data.train_index, data.val_index, data.test_index
    s = (s - s[tr].mean()) / s[tr].std()
    X_train, y_train = make_windows(s[:va[-1] + 1], lookback, horizon, stride=train_stride)
    X_test, y_test = make_windows(s[te[0] - lookback:te[-1] + 1], lookback, horizon)
    return Bunch(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test, season=24)


def _statsmodels(name, column):
    import importlib

    # not every bundled set is exposed as an attribute of statsmodels.datasets (elec_equip)
    frame = importlib.import_module(f"statsmodels.datasets.{name}").load_pandas().data
    if name == "elnino":  # one row per year, one column per month
        return frame.drop(columns="YEAR").to_numpy(dtype=np.float64).ravel()
    column = frame.columns[0] if column is None else column
    return frame[column].interpolate(limit_direction="both").to_numpy(dtype=np.float64)


def _aeon_series(name):
    from aeon import datasets as ads

    if name == "airline":
        return np.asarray(ads.load_airline(), dtype=np.float64)
    if name == "lynx":
        return np.asarray(ads.load_lynx(), dtype=np.float64)
    if name.startswith("uschange_"):  # quarterly % changes of five US series, 1960-2016
        channels = ("consumption", "income", "production", "savings", "unemployment")
        return np.asarray(ads.load_uschange(), dtype=np.float64)[
            channels.index(name.removeprefix("uschange_"))]
    if name == "shampoo_sales":
        return np.asarray(ads.load_shampoo_sales(), dtype=np.float64).ravel()
    if name == "PBS":
        return np.asarray(ads.load_PBS_dataset(), dtype=np.float64).ravel()
    raise ValueError(f"unknown aeon series {name!r}")


def series(ctx, source, name, lookback, horizon, season, column=None, test_fraction=0.2,
           growth=False):
    """A bundled series: the last ``test_fraction`` is the test part (windows whose targets
    lie in it), the windows before it train; standardised with the training part.
    ``growth``: the series' annualised quarterly growth in percent, 400 * diff(log(s))."""
    s = _statsmodels(name, column) if source == "statsmodels" else _aeon_series(name)
    if growth:
        s = 400.0 * np.diff(np.log(s))
    n_train = int(round(len(s) * (1 - test_fraction)))
    s = (s - s[:n_train].mean()) / s[:n_train].std()
    X_train, y_train = make_windows(s[:n_train], lookback, horizon)
    X_test, y_test = make_windows(s[n_train - lookback:], lookback, horizon)
    return Bunch(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test, season=season)


# -- series classification -------------------------------------------------------------------
def _to_nlc(X):
    """aeon's (n, channels, length) array, or list of (channels, length_i) arrays of unequal
    lengths, as skdiff's (n, length, channels), unequal series padded with their last value."""
    if isinstance(X, np.ndarray):
        return np.ascontiguousarray(X.transpose(0, 2, 1), dtype=np.float64)
    length = max(x.shape[1] for x in X)
    return np.stack([np.pad(x, ((0, 0), (0, length - x.shape[1])), mode="edge").T for x in X])


def ucr(ctx, name):
    """A UCR/UEA set bundled with aeon (read offline), its own train/test split; unequal
    lengths are padded to the longest series of both parts with each series' last value."""
    from aeon.datasets import load_classification

    Xtr, ytr = load_classification(name, split="train")
    Xte, yte = load_classification(name, split="test")
    if not isinstance(Xtr, np.ndarray) or not isinstance(Xte, np.ndarray):
        length = max(x.shape[-1] for x in list(Xtr) + list(Xte))
        Xtr, Xte = ([np.pad(x, ((0, 0), (0, length - x.shape[1])), mode="edge") for x in part]
                    for part in (Xtr, Xte))
    return Bunch(X_train=_to_nlc(Xtr), y_train=np.asarray(ytr), X_test=_to_nlc(Xte),
                 y_test=np.asarray(yte))


def tser(ctx, name):
    """A time-series extrinsic regression set bundled with aeon (read offline), its own
    train/test split: a country's COVID-19 death rate from its last 84 days of confirmed
    cases (``"covid_3month"``), or a day's sentiment score from its 24 hourly close prices
    and traded volumes of the Cardano cryptocurrency (``"cardano_sentiment"``)."""
    from aeon import datasets as ads

    load = getattr(ads, f"load_{name}")
    (Xtr, ytr), (Xte, yte) = load(split="train"), load(split="test")
    return Bunch(X_train=_to_nlc(Xtr), y_train=np.asarray(ytr, dtype=np.float64),
                 X_test=_to_nlc(Xte), y_test=np.asarray(yte, dtype=np.float64))


# -- functions (NDPRegressor as a GaussianProcessRegressor drop-in) ---------------------------
def _context_sizes(rng, n_tasks, n_context):
    return rng.randint(n_context[0], n_context[1] + 1, size=n_tasks)


def gp_draws(ctx, kernel, lengthscale, noise_std, units, n_tasks=16, n_context=(3, 12),
             n_query=50, seed=0):
    """Functions drawn from a GP (unit variance, ``lengthscale`` relative to the interval's
    width; a number or ``("uniform", lo, hi)``), noisy observations (``noise_std``, relative
    to the signal), ``n_context`` points to condition on, ``n_query`` query points over the
    whole interval (all uniform on it).

    ``units="natural"``: x in [-2, 2], y on the GP's scale. ``units="arbitrary"``: the same
    draws with x in [0, 1000] and y scaled by 1e-3 and shifted by 0.37.
    """
    if ctx.quick:
        n_tasks = min(n_tasks, 4)
    ls = (lengthscale[0], 4 * lengthscale[1], 4 * lengthscale[2]) \
        if isinstance(lengthscale, tuple) else 4 * lengthscale
    hi = n_context[1]
    data = make_gp_functions(n_tasks, hi + n_query, kernel=kernel, lengthscale=ls,
                             noise=noise_std ** 2, domain=(-2.0, 2.0), random_state=seed)
    sizes = _context_sizes(np.random.RandomState(seed + 1), n_tasks, n_context)
    x_offset, x_scale, offset, scale = (0.0, 1.0, 0.0, 1.0) if units == "natural" \
        else (2.0, 250.0, 0.37, 1e-3)
    tasks, natural = [], []
    for i, c in enumerate(sizes):
        X, y = (data.X[i] + x_offset) * x_scale, offset + scale * data.y[i]
        tasks.append((X[:c], y[:c], X[hi:], y[hi:]))
        natural.append((data.X[i][:c], data.y[i][:c], data.X[i][hi:]))
    # what the exact GP with the true hyper-parameters needs (natural units)
    oracle = dict(kernel=kernel, lengthscales=data.lengthscale, noise_var=noise_std ** 2,
                  natural=natural)
    return Bunch(tasks=tasks, unit=(offset, scale), oracle=oracle)


def _forrester(x):
    return (6 * x[:, 0] - 2) ** 2 * np.sin(12 * x[:, 0] - 4)


def _branin(x):
    x1, x2 = x[:, 0], x[:, 1]
    return ((x2 - 5.1 / (4 * np.pi ** 2) * x1 ** 2 + 5 / np.pi * x1 - 6) ** 2
            + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10)


_TEST_FUNCTIONS = {"forrester": (_forrester, np.array([[0.0, 1.0]])),
                   "branin": (_branin, np.array([[-5.0, 10.0], [0.0, 15.0]]))}


def _family_member(name, rng):
    """One member of a function family on [0, 1], its parameters drawn uniformly from
    ``rng``, as a function of x (n,)."""
    if name == "periodic":
        a, period, phase = rng.uniform(0.7, 1.3), rng.uniform(0.25, 0.5), rng.uniform(0, 6.3)
        return lambda x: a * np.sin(2 * np.pi * x / period + phase)
    if name == "trend":
        a, phase = rng.uniform(-2, 2), rng.uniform(0, 6.3)
        return lambda x: 2 * a * (x - 0.5) + 0.3 * np.sin(6 * x + phase)
    if name == "step":
        c = rng.uniform(0.3, 0.7)
        return lambda x: np.where(x > c, 1.0, -1.0)
    if name == "quadratic":
        a, c = rng.uniform(1, 3), rng.uniform(0.2, 0.8)
        return lambda x: a * (x - c) ** 2
    if name in ("wiggle", "drift"):  # a smooth random process (random Fourier features)
        a = rng.uniform(-2, 2) if name == "drift" else 0.0  # plus a line of slope 2a
        b = rng.uniform(0.2, 1.0)
        w, omega = rng.normal(size=50), rng.normal(size=50) / 0.15
        phase = rng.uniform(0, 2 * np.pi, size=50)
        return lambda x: 2 * a * (x - 0.5) + b * np.sqrt(2 / 50) * (
            np.cos(np.outer(x, omega) + phase) @ w)
    if name == "growth":
        b, sign = rng.uniform(1, 4), rng.choice([-1.0, 1.0])
        return lambda x: sign * np.exp(b * x)
    raise ValueError(f"unknown function family {name!r}")


def function_family(ctx, name, noise_std, n_tasks=16, n_context=(3, 12), n_query=50,
                    seed=0):
    """Members of a function family on [0, 1] that is not a stationary GP: a sine of random
    amplitude, period and phase (``"periodic"``), a line of random slope plus a small sine
    (``"trend"``), a unit step at a random place (``"step"``), a parabola (``"quadratic"``),
    a random smooth wiggle (``"wiggle"``: a sum of 50 random cosines, an SE process of
    lengthscale 0.15, with a random amplitude), a line of random slope plus such a wiggle
    (``"drift"``), an exponential of random rate and sign (``"growth"``).
    Each task draws a member and its context and query points uniformly on [0, 1]; the
    noise is ``noise_std`` times the member's standard deviation at the drawn points.
    Metrics are on the functions' own scale."""
    if ctx.quick:
        n_tasks = min(n_tasks, 4)
    rng = np.random.RandomState(seed)
    tasks = []
    for c in _context_sizes(rng, n_tasks, n_context):
        f = _family_member(name, rng)
        X = rng.uniform(size=(c + n_query, 1))
        fx = f(X[:, 0])
        y = fx + noise_std * max(float(fx.std()), 1e-3) * rng.normal(size=len(X))
        tasks.append((X[:c], y[:c], X[c:], y[c:]))
    return Bunch(tasks=tasks, unit=(0.0, 1.0), oracle=None)


def classic_function(ctx, name, noise_std, n_tasks=16, n_context=(3, 12), n_query=50, seed=0):
    """A classic test function on its usual domain, observed with noise of ``noise_std``
    times the function's standard deviation over the domain; every task draws its context
    and query points uniformly. Metrics are reported with y centred on the function's mean
    and divided by its standard deviation over the domain."""
    if ctx.quick:
        n_tasks = min(n_tasks, 4)
    f, bounds = _TEST_FUNCTIONS[name]
    rng = np.random.RandomState(seed)
    grid = bounds[:, 0] + (bounds[:, 1] - bounds[:, 0]) * rng.uniform(size=(20000, len(bounds)))
    offset, scale = float(f(grid).mean()), float(f(grid).std())
    sizes = _context_sizes(rng, n_tasks, n_context)
    tasks = []
    for c in sizes:
        X = bounds[:, 0] + (bounds[:, 1] - bounds[:, 0]) * rng.uniform(size=(c + n_query,
                                                                            len(bounds)))
        y = f(X) + noise_std * scale * rng.normal(size=len(X))
        tasks.append((X[:c], y[:c], X[c:], y[c:]))
    return Bunch(tasks=tasks, unit=(offset, scale), oracle=None)
