"""DIFFormer estimators: classification and regression of samples that attend to each other.

See :mod:`skdiff.nn.difformer` for the network and the user guide for the method.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import is_classifier
from sklearn.neighbors import kneighbors_graph
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback

from .._base import (
    TRAINING_PARAMETER_CONSTRAINTS,
    FitData,
    Interval,
    NeuralEstimatorBase,
    StrOptions,
    derive_seed,
    first_item,
    n_validation_rows,
)
from .._checks import (
    caller_stacklevel,
    check_sample_weight,
    check_target_length,
    validate_data,
)
from .._docs import fill_doc, parse_docs
from .._engine import float64_copy
from .._graph import Graph, check_adjacency, check_node_ids, check_not_bool
from .._rows import KeptRows, feature_row_hashes, stack_rows
from .._tasks import MIN_CALIBRATION_ROWS, ClassifierTask, RegressorTask, beats_by_se
from ..callbacks import WeightAveraging
from ..nn.difformer import DIFFormer
from ..nn.losses import softplus_inverse
from ._data import (
    FeatureScaling,
    FullBatch,
    GraphInputs,
    Partitions,
    Reshuffle,
    WeightsStamp,
    adjacency_fingerprint,
    rows_fingerprint,
    streamed_forward,
    streams,
)
from ._propagation import (
    AUTO_MAX_NODES,
    GRAPH_CHECK_MAX_CELLS,
    LabelSmoother,
    ValueSmoother,
    features_hits,
    graph_helps_features,
    smoothed_features,
)

#: ``n_neighbors="auto"``: the graph's k, and the most rows it is built for (a k-nearest-
#: neighbour search over all rows; larger data sets pass a graph or an int).
AUTO_NEIGHBORS = 10
AUTO_NEIGHBORS_MAX_ROWS = 20_000

#: ``label_propagation="auto"`` leaves the labels unspread where a linear model on the
#: features predicts held-out labelled nodes better than the spread labels by more than
#: this many standard errors (:meth:`DIFFormerClassifier._labels_beat_features`): 0, any
#: margin. The comparison stands in for the one it cannot make (the propagation against
#: the network, trained on every labelled node), and a network at least as good as the
#: linear model gains nothing from labels that spread worse than that model predicts;
#: a margin of two (tried first) left it on where it cost 2 to 5 points.
PROPAGATION_N_SE = 0.0

#: ``dropout="auto"`` when labels are scarce (some rows unlabelled, or a graph).
AUTO_DROPOUT = 0.2

#: ``n_layers="auto"``: the depth over a graph (the hops of the graph term) and without one.
AUTO_LAYERS_GRAPH, AUTO_LAYERS_NO_GRAPH = 4, 1

#: Ridge penalties ``linear_fallback`` chooses from (leave-one-out, as ``RidgeCV`` does).
FALLBACK_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 13))

#: Fewest validation rows ``linear_fallback="auto"`` compares the network and the ridge on.
MIN_FALLBACK_ROWS = 5

#: Standard errors by which the network's validation MSE must beat the ridge's for
#: ``linear_fallback`` to keep it. The network's epoch (and, with enough rows, which of two
#: networks) was chosen on the same validation rows, so its validation error is optimistic:
#: on the development rows of ``benchmarks/defaults.py`` refitted with five seeds, networks
#: of four layers that beat the ridge by one to two standard errors were worse than the
#: ridge on the test rows in 6 of 8 fits (by 15-61 % in four), better in 2 (by 1-2 %). With
#: one layer (``n_layers="auto"`` on a table) one standard error gained on grunfeld (test
#: squared error 1.46 -> 1.11 times ARD GPR's, median) but lost more elsewhere: statecrime
#: (38 training rows) 3.6 times the ridge's in one more seed, Friedman #1 with 50 labels
#: 3.2 instead of 2.4 times ARD GPR's in one, the block-model graph 1.10-1.13 instead of
#: 0.95 times the SGC ridge's in two. (Two standard errors too let one network of the
#: five statecrime seeds through, 3.4 times the ridge's on the test rows.)
FALLBACK_MARGIN_SE = 2.0

#: ``partial_fit`` trains every call on the call's rows and on the distinct rows of earlier
#: calls, up to this many (a uniform sample of them beyond, see :class:`~skdiff._rows.KeptRows`).
PARTIAL_FIT_MAX_ROWS = 10_000

#: Smallest scale (of a standardised target) the ridge's residuals are divided by before
#: the network learns them (``linear_fallback``): a target the ridge fits exactly is not
#: blown up to its rounding errors.
MIN_RESIDUAL_SCALE = 1e-3

#: Rows per block of the ``linear_fallback`` ridge's float64 predictions.
_RIDGE_BLOCK = 65_536

__all__ = ["DIFFormerClassifier", "DIFFormerRegressor"]


def _ridge_means(ridge, features):
    """``ridge``'s predictions of the rows of ``features``, of shape (rows, outputs).

    In float64, so that a row's prediction does not depend on the rows beside it (float32
    products round differently by a row's place in a BLAS block), and in blocks, so that a
    large input is not copied whole."""
    n = features.shape[0]
    return np.concatenate([
        ridge.predict(features[i:i + _RIDGE_BLOCK].astype(np.float64))
        for i in range(0, n, _RIDGE_BLOCK)]).reshape(n, -1)


def _beside(F, S, scale):
    """``F`` and ``S`` with its columns divided by ``scale``, side by side (CSR stays CSR)."""
    if sp.issparse(F):
        return sp.hstack([F, S @ sp.diags(1.0 / scale)], format="csr")
    return np.hstack([F, S / scale])


#: Training steps over more rows than this use per-layer gradient checkpointing.
_CHECKPOINT_ROWS = 20_000

#: Rows per chunk of inductive prediction when ``batch_size`` is None.
_PREDICT_CHUNK = 8192

DIFFORMER_DOCS = parse_docs("""
feature_scaling : {"auto", "standard", "row"} or None
    Preprocessing of the features, fitted in ``fit``: ``"row"`` divides every row by its L1
    norm (the row-normalised bag-of-words features of the paper's citation graphs),
    ``"standard"`` centres and scales every column (sparse columns are only scaled),
    ``None`` leaves them as given, and ``"auto"`` takes ``"row"`` for non-negative sparse
    features (a scipy matrix, or 90 % zeros or more) whose columns share one scale (their
    largest values within a factor of 1,000: counts, indicators, frequencies) and
    ``"standard"`` otherwise. ``"standard"`` makes the model independent of every column's
    unit, ``"row"`` of a unit shared by all columns; ``feature_scaling_`` says which was
    used.
kernel : {"simple", "advanced", "softmax"}
    Pairwise diffusivity: ``"simple"`` = 1 + q.k (DIFFormer-s, linear in the number of
    rows), ``"advanced"`` = sigmoid(q.k) (DIFFormer-a, quadratic, row-blocked),
    ``"softmax"`` = scaled dot-product attention across samples.
qk_norm : {"global", "row"}
    Normalisation of queries and keys of the simple kernel: ``"global"`` divides by the
    Frobenius norm of the whole tensor (the official code), ``"row"`` normalises every
    row (the paper's equations).
n_layers : int or "auto"
    Diffusion layers. ``"auto"``: 4 when the rows form a graph (an ``adjacency`` or a
    ``graph`` given to ``fit``, or the graph the classifier builds for a semi-supervised
    table, ``n_neighbors``), 1 without one, as on a fully labelled table (``n_layers_``).
    Every layer moves each row's state a step ``alpha`` toward the attention's weighted
    average of all rows: over a graph the layers are the hops along which the graph term
    carries information, while without one stacked layers mostly blur the rows together
    (at ``alpha=0.5`` a row keeps 1/16 of its own state after four). On tables without a
    graph one layer fitted better: the regressor's test squared error on 750 rows of
    ``make_friedman2`` fell from 0.012 to 0.002 of the targets' variance, on products of
    two features from 0.54-0.62 to 0.20-0.23, while over a graph one layer lost most of
    the network's fit (R² 0.86 -> 0.48 on a smooth field over a 6-nearest-neighbour
    graph).
hidden_dim : int
    Width of the hidden state (and of each head).
n_heads : int
    Attention heads (averaged).
alpha : float in (0, 1]
    Step size tau of the diffusion (the weight of the propagated state in each layer's
    update).
dropout : float in [0, 1) or "auto"
    Dropout after the input block and after every layer; also the source of the
    classifier's :meth:`sample_posterior` randomness (and the regressor's with
    ``uncertainty="mc_dropout"``). ``"auto"``: 0.2 when labels are scarce, that is when
    some rows are unlabelled or the rows form a graph (given, or built by
    ``n_neighbors``), and 0 when every row is labelled and there is no graph: on fully
    labelled tabular data dropout made a network of four layers underfit (accuracy on
    held-out rows 0.72 -> 0.99 on two circles, 0.74 -> 0.94 on ``make_hastie_10_2``; test
    MSE 6.2 -> 3.3 on Friedman #1); with one layer, the depth ``n_layers="auto"`` takes
    on a table, dropout hurt less or helped (circles 0.99 either way; Friedman #1 1.76
    with it, 2.03 without). The regressor then holds out validation rows
    (``early_stopping="auto"``) to calibrate its intervals, which without dropout would
    only know the errors on rows the network has seen, and keeps 0.2 when that split
    would hold fewer than 20 rows; with ``uncertainty="mc_dropout"``, whose spread is
    dropout's, ``"auto"`` is 0.2. Without dropout the classifier's
    :meth:`sample_posterior` draws are all equal to :meth:`predict_proba`, and those of
    the regressor with ``uncertainty="mc_dropout"`` to :meth:`predict` (with a warning):
    set ``dropout`` above 0 for a Monte Carlo spread. ``dropout_`` holds the
    value used.
graph_weight : float in [0, 1], None or "auto"
    How attention and the graph term combine when an adjacency is given: ``None`` adds
    them (official), ``g`` mixes ``(1 - g) attention + g graph``; 0 drops the graph
    term, 1 keeps only it (a GCN-like model). ``"auto"``: ``None`` when averaging the
    features over the given graph makes a linear model on them at least as predictive of
    the labels (a 5-fold check over the labelled nodes: logistic regression for the
    classifier, ridge for the regressor, on the features and on their 2-hop SGC
    average), 0 otherwise: on a heterophilous graph, whose edges mostly join different
    classes, the graph term blurs what the features say. Graphs built by
    ``n_neighbors``, fits without labelled nodes to check and graphs of more than a
    million nodes keep ``None``. ``graph_weight_`` holds the value used.
value_projection : bool
    Learn a value projection; off uses the hidden state itself (the official small-graph
    setting).
attention_scope : {"all", "graph"}
    ``"all"``: attend to every row; ``"graph"``: only along the edges (with
    ``kernel="softmax"`` a GAT-like graph attention); needs a graph: an adjacency, a
    :class:`~skdiff.Graph`, or the classifier's k-nearest-neighbour graph
    (``n_neighbors``, whose ``"auto"`` builds one for this scope).
block_size : int
    Query rows per block of the quadratic kernels (memory O(block_size * n)).
batch_size : int or None
    ``None`` trains full batch (one step per epoch); an int below the number of rows
    trains on random partitions of that many rows with the induced sub-graph of each
    (paper Sec. 5; under ``accelerate launch`` each process trains its own partitions,
    and full batch is refused there), and scores early stopping's validation rows on a
    fixed partition alike. The forward over all rows (``transduction_`` and
    ``summaries_`` at the end of ``fit``, ``predict`` with an adjacency) then runs layer
    by layer in chunks of that many rows: the same result in O(n hidden_dim) memory for
    the simple kernel over all rows. Features are scaled chunk by chunk, so a float32
    array or ``numpy.memmap`` is used as given. Also the chunk size of inductive
    prediction (8192 rows when ``None``). Steps over more than 20,000 rows recompute
    each layer in the backward pass (gradient checkpointing: same result, less memory,
    ~30 % more time).
feature_scaling_ : {"standard", "row"} or None
    The feature preprocessing in use (``feature_scaling`` with ``"auto"`` resolved).
n_features_in_ : int
    Features of ``X`` (1 in graph mode, where ``X`` holds node ids).
feature_names_in_ : ndarray of str
    Column names of ``X`` when it is a DataFrame with string column names.
summaries_ : list of dict
    Per-layer state of the training rows used by inductive ``predict`` (simple kernel:
    per-head sums, O(1) in the training-set size; other kernels: keys and values),
    computed with the fitted weights: if the network's weights change after ``fit``
    (``net_.load_params``), inductive prediction raises a ``RuntimeError`` (the training
    rows to recompute them are not kept), while graph mode recomputes its full-graph
    forward.
fitted_on_graph_ : bool
    Whether ``fit`` received a :class:`~skdiff.Graph` (then ``X`` holds node ids).
graph_weight_ : float or None
    The ``graph_weight`` of the network (``"auto"`` resolved).
dropout_ : float
    The ``dropout`` of the network (``"auto"`` resolved).
n_layers_ : int
    The diffusion layers of the network (``n_layers`` with ``"auto"`` resolved).
X : {array-like, sparse matrix} of shape (n_samples, n_features), or node ids (k, 1)
    Features, one row per sample; with ``graph``, a column of node ids
    (``graph.node_ids()`` or a subset).
y : array-like of shape (n_samples,), or (n_samples, n_outputs) for the regressor
    Labels (strings allowed) or targets. Unlabelled rows, marked by the classifier's
    ``unlabelled`` (``-1``) or by ``NaN`` for the regressor, take part in the attention
    but not in the loss (semi-supervised learning). In graph mode, nodes not in ``X`` are
    unlabelled.
adjacency : {array-like, sparse matrix, torch tensor} of shape (n_samples, n_samples)
    Graph among the rows of ``X`` (features mode; a torch tensor, dense or sparse, is read
    as numpy or scipy): adds the graph term, and in prediction
    makes the rows of ``X`` attend to each other in one joint forward (the paper's
    transductive setting) instead of to the stored training rows. Edges are undirected
    (an asymmetric matrix is symmetrised as ``max(A, A.T)``) and may be weighted; the
    diagonal is ignored (the graph term gives every row a self-loop of its own). Pass
    either ``adjacency`` or ``graph``, not both.
graph : Graph
    A :class:`~skdiff.Graph` whose nodes are the samples (graph mode); ``X`` then holds
    node ids. In prediction, ``None`` uses the graph of ``fit`` when the estimator was
    fitted in graph mode; another graph (same number of node features) gets a
    full-graph forward of its own.
validation_mask : array-like of bool of shape (n_samples,)
    Labelled rows used only for early stopping (e.g. a public validation split), instead
    of a random ``validation_fraction``; they stay in the attention, unlabelled.
sample_weight : array-like of shape (n_samples,)
    Per-row weight in the loss (normalised by the weights' sum); a labelled row of weight
    0 is the same as an unlabelled row. ``None``: every row weighs 1.
""")
DIFFORMER_DOCS["references"] = """
.. [1] Q. Wu, C. Yang, W. Zhao, Y. He, D. Wipf, J. Yan, "DIFFormer: Scalable (Graph)
   Transformers Induced by Energy Constrained Diffusion", ICLR 2023, arXiv:2301.09474.
"""
DIFFORMER_DOCS["parameters"] = ["network_parameters", "training_parameters"]
DIFFORMER_DOCS["network_parameters"] = [
    "feature_scaling", "kernel", "qk_norm", "n_layers", "hidden_dim", "n_heads", "alpha",
    "dropout", "graph_weight", "value_projection", "attention_scope", "block_size"]
DIFFORMER_DOCS["fit_inputs"] = [
    "X", "y", "adjacency", "graph", "validation_mask", "sample_weight"]
DIFFORMER_DOCS["predict_inputs"] = ["X", "adjacency", "graph"]
DIFFORMER_DOCS["partial_fit_summary"] = """
Full batch, an epoch is one optimisation step; with ``batch_size`` below the number
of rows it is one pass over a fresh random partition. The first call on an unfitted
estimator fits the feature scaling and builds the network (``n_init`` networks, one
epoch each, the best kept); later calls continue the kept network, whose number of
features and outputs must not change. With ``early_stopping=True`` a call keeps its
epoch only if it beats, on the call's validation rows, the weights the call started from
(skorch's ``EarlyStopping(load_best=True)`` with those weights as the score to beat).
A table's rows (no ``adjacency``, no ``graph``) are kept from call to call, as
DIFFormer's attention needs them: every call trains on its own rows and on the distinct
rows of the earlier calls (a row given again counts once, so an epoch loop over the same
rows trains on them alone), those kept rows only ever on the training side of the
validation split, and inductive prediction attends to all of them (``summaries_``).
Beyond 10,000 distinct rows a uniform sample of that many is kept (reservoir sampling,
from the fit's seed). The classifier given ``make_classification`` (3 classes) 15 rows a
call scores 0.80 after four passes over 475 rows, as ``fit`` on them (0.80); trained on
each call's rows alone it scored 0.34 to 0.52 from pass to pass. With
``early_stopping=True`` each call scores its one step on the few rows it holds out of its
own (two of 15 there) and keeps the step only if they improve, which makes such a stream
wander (0.49 to 0.76 over ten passes); the classifier's default, ``"auto"``, stops early
only from 10,000 labelled rows on and otherwise keeps every call's step.
``transduction_`` holds the predictions of the call's rows. ``fit`` keeps no rows: a
``partial_fit`` after it starts keeping them. A call with an adjacency or a graph trains on
its graph alone and keeps nothing.
"""
DIFFORMER_DOCS["predict_modes"] = """
Without ``adjacency``, each row attends to the stored training rows only (inductive:
independent of how the rows are batched; a model fitted with a graph treats new rows
as isolated nodes, and warns when X holds the very rows it was fitted on with an
adjacency). With ``adjacency`` (n, n) over the rows of X: one joint forward
over them (the paper's transductive setting), for a model fitted with a graph (an
``adjacency``, or the classifier's ``n_neighbors``); a model fitted without one has
no trained graph term and refuses an ``adjacency`` (a ``ValueError``). The rows of
``fit`` with its adjacency are the fitted nodes, and so, where ``fit`` built the
nearest-neighbour graph, is every row equal to a fitted row, given without an adjacency:
their predictions are ``transduction_``'s, the known labels propagated where
``label_propagation_`` is set. In graph mode
(``fit(..., graph=g)``), X holds node ids and the answer comes from a full-graph
forward (cached at the end of ``fit`` for the fitted graph; pass ``graph`` to predict
on another graph).
"""
DIFFORMER_DOCS["score_routing"] = """
``adjacency`` and ``graph`` reach :meth:`predict`. Under metadata routing (a
:class:`~sklearn.pipeline.Pipeline`, a cross-validation, a search), ``graph`` is
requested by default, so a routed cross-validation of ``fit(ids, y, graph=g)`` scores
on ``g``; ``adjacency`` is routed once requested with
``set_score_request(adjacency=True)``, as for ``fit`` and ``predict``.
"""
DIFFORMER_DOCS["input_attributes"] = [
    "feature_scaling_", "n_features_in_", "feature_names_in_", "summaries_", "fitted_on_graph_",
    "graph_weight_", "dropout_", "n_layers_"]

_MODEL_CONSTRAINTS = {
    "feature_scaling": [StrOptions({"auto", "standard", "row"}), None],
    "kernel": [StrOptions({"simple", "advanced", "softmax"})],
    "qk_norm": [StrOptions({"global", "row"})],
    "n_layers": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "hidden_dim": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_heads": [Interval(numbers.Integral, 1, None, closed="left")],
    "alpha": [Interval(numbers.Real, 0, 1, closed="right")],
    "dropout": [Interval(numbers.Real, 0, 1, closed="left"), StrOptions({"auto"})],
    "graph_weight": [Interval(numbers.Real, 0, 1, closed="both"), None, StrOptions({"auto"})],
    "value_projection": ["boolean"],
    "attention_scope": [StrOptions({"all", "graph"})],
    "block_size": [Interval(numbers.Integral, 1, None, closed="left")],
}


@fill_doc(DIFFORMER_DOCS)
class _DIFFormerBase(NeuralEstimatorBase):
    """Inputs, training sets, network and prediction modes shared by the DIFFormer estimators.

    Three ways to call ``fit``/``predict``: features mode (``X`` rows, no graph), features
    with an ``adjacency`` among the rows of ``X``, and graph mode (``graph=`` a
    :class:`~skdiff.Graph`, ``X`` a column of node ids). The task layer encodes the targets.
    """

    _parameter_constraints = {**TRAINING_PARAMETER_CONSTRAINTS, **_MODEL_CONSTRAINTS}

    # metadata routing: score requests ``graph`` unless told otherwise. A Graph passes
    # through cross-validation whole, and scoring a graph-mode model with the graph it was
    # fitted on is what it does without one, so a routed cross-validation of
    # fit(ids, y, graph=g) needs no score request (left unset, the routed graph would be an
    # error for score); ``adjacency`` keeps scikit-learn's unset default (passing it is an
    # error until requested), as for fit and predict.
    __metadata_request__score = {"graph": True}

    _auto_dropout_note = "dropout='auto' chooses 0 for fully labelled rows without a graph"

    # -- inputs ----------------------------------------------------------------------------
    def _inputs(self, X, adjacency, graph, *, reset):
        """Validate ``X`` (+ ``adjacency`` or ``graph``) -> :class:`GraphInputs`."""
        if graph is not None:
            if adjacency is not None:
                raise ValueError("Pass either 'graph' (graph mode, X = node ids) or "
                                 "'adjacency' (features mode), not both.")
            if not isinstance(graph, Graph):
                raise TypeError(f"'graph' must be a skdiff.Graph; got {type(graph).__name__}. "
                                "Build one with Graph(features, adjacency).")
            X = validate_data(self, X, dtype=None, reset=reset)
            ids = check_node_ids(X, graph.n_nodes)
            self._check_in_dim(graph.n_features, reset, "the graph's node features")
            return GraphInputs(graph.features, self._scaling(graph.features, reset),
                               graph.adjacency, self.device_, ids)
        # float32 stays (memory maps are not copied); float64 keeps its precision for the
        # scaling statistics and the shift by the mean, then the scaled rows are float32
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32),
                          reset=reset)
        A = None if adjacency is None else check_adjacency(adjacency, X.shape[0],
                                                           split_hint=True)
        self._check_in_dim(X.shape[1], reset, "X")
        return GraphInputs(X, self._scaling(X, reset), A, self.device_)

    def _scaling(self, F, reset):
        """The fitted ``feature_scaling`` (fitted on ``F`` here when ``reset``)."""
        if reset:
            self._feature_scaling = FeatureScaling(self.feature_scaling).fit(F)
            self.feature_scaling_ = self._feature_scaling.how_
        return self._feature_scaling

    def _check_in_dim(self, n_features, reset, what):
        if reset or not hasattr(self, "module_"):
            return
        if n_features != self.module_.in_dim:
            raise ValueError(f"{what} has {n_features} features but {type(self).__name__} "
                             f"was fitted on {self.module_.in_dim}.")

    # -- the skeleton's hooks --------------------------------------------------------------
    def _make_data(self, X, y, *, reset, adjacency=None, graph=None, validation_mask=None,
                   sample_weight=None, classes=None, keep_rows=False):
        if not keep_rows:  # only partial_fit trains on rows of earlier calls
            self.__dict__.pop("_kept_rows", None)
        inputs = self._inputs(X, adjacency, graph, reset=reset)
        # fit reads one label per node, so a node listed twice would carry two labels;
        # prediction answers node by node and takes repeated ids, as repeated rows
        if inputs.ids is not None and np.unique(inputs.ids).size != inputs.ids.size:
            raise ValueError("X holds duplicate node ids; each node is one sample (pass "
                             "each id once).")
        if reset:  # predict(X) without the adjacency of fit is a likely slip: warned there
            self._graph_rows_key = (rows_fingerprint(inputs.features)
                                    if adjacency is not None else None)
        n_rows = inputs.n if inputs.ids is None else inputs.ids.size
        check_target_length(y, n_rows)
        raw_weights = check_sample_weight(sample_weight, n_rows)
        targets, labelled, strata, weights = self._targets(y, reset=reset, classes=classes,
                                                           weights=raw_weights)
        n_kept = 0
        if keep_rows:
            if inputs.ids is None and not inputs.has_graph:
                inputs, targets, labelled, strata, weights, n_kept = self._with_kept_rows(
                    inputs, targets, labelled, strata, raw_weights, weights, reset)
            else:  # the rows of a graph are its nodes: a call's graph is the whole sample
                self.__dict__.pop("_kept_rows", None)
        # a labelled row of weight 0 is an unlabelled row, here as everywhere in fit
        labelled = labelled & (weights > 0)
        inputs = self._with_neighbors_graph(inputs, labelled, reset)
        if self.attention_scope == "graph" and not inputs.has_graph:
            raise ValueError("attention_scope='graph' attends along the edges of a graph: pass "
                             f"'adjacency' (or 'graph') to fit{self._neighbors_hint()}, or use "
                             "attention_scope='all'.")
        rows = np.flatnonzero(labelled)
        if rows.size == 0:
            raise ValueError("The sample weights are zero on every labelled row; nothing to "
                             "train on.")
        valid_rows = None
        if validation_mask is not None:
            mask = np.asarray(validation_mask)
            if mask.dtype != bool or mask.shape != (n_rows,):
                raise ValueError("'validation_mask' must be a boolean array with one entry per "
                                 f"row of X ({n_rows},); got dtype {mask.dtype} and shape "
                                 f"{mask.shape}.")
            valid_rows = np.intersect1d(np.flatnonzero(mask), rows)
            if valid_rows.size == 0:
                raise ValueError(
                    f"'validation_mask' marks {np.count_nonzero(mask)} rows, none of them "
                    "labelled (with a positive weight), so early stopping would have nothing "
                    "to score; mark labelled rows to hold out, or pass validation_mask=None "
                    "for a random validation_fraction of them.")
            if valid_rows.size == rows.size:
                raise ValueError(
                    f"'validation_mask' marks all {rows.size} labelled rows, which leaves none "
                    "to train on; mark only the rows held out for early stopping.")
        if reset:
            seeds = rows if valid_rows is None else np.setdiff1d(rows, valid_rows)
            self.graph_weight_ = self._resolved_graph_weight(inputs, targets, seeds)
            self.dropout_ = self._resolved_dropout(inputs, rows)
            self.n_layers_ = self.n_layers if self.n_layers != "auto" else (
                AUTO_LAYERS_GRAPH if inputs.has_graph else AUTO_LAYERS_NO_GRAPH)
        kept = np.arange(n_rows, n_rows + n_kept)
        return FitData(rows=rows, strata=None if strata is None else strata[rows],
                       valid_rows=valid_rows, train_only=kept if n_kept else None,
                       extra=dict(inputs=inputs, targets=targets, weights=weights,
                                  graph=graph, n_given=n_rows if n_kept else None))

    def _with_kept_rows(self, inputs, targets, labelled, strata, raw_weights, weights, reset):
        """``partial_fit``'s call rows followed by the kept rows of earlier calls that this
        call does not give again, and the kept rows updated with this call's
        (:class:`~skdiff._rows.KeptRows`, at most ``PARTIAL_FIT_MAX_ROWS``). Returns the
        inputs, targets, labelled flags, strata and loss weights of all those rows, and how
        many kept rows were appended."""
        X = inputs.features
        hashes = feature_row_hashes(X, targets, raw_weights)
        before = None if reset else self.__dict__.get("_kept_rows")
        seed = derive_seed(self.seed_, 0 if before is None else before.n_seen + 1)
        if before is None:
            self._kept_rows = KeptRows.of(X, targets, labelled, strata, raw_weights, hashes,
                                          PARTIAL_FIT_MAX_ROWS, seed)
            return inputs, targets, labelled, strata, weights, 0
        self._kept_rows = before.updated(X, targets, labelled, strata, raw_weights, hashes,
                                         PARTIAL_FIT_MAX_ROWS, seed)
        others = before.others(hashes)
        if others.size == 0:
            return inputs, targets, labelled, strata, weights, 0
        X_k, t_k, l_k, s_k, w_k = before.take(others)
        features = stack_rows(X, X_k)
        targets = np.concatenate([targets, t_k])
        labelled = np.concatenate([labelled, l_k])
        strata = None if strata is None else np.concatenate([strata, s_k])
        raw = np.concatenate([raw_weights, w_k])
        # class weights (class_weight="balanced") over all the rows trained on
        weights = raw * self._class_weights(targets, labelled) if is_classifier(self) else raw
        inputs = GraphInputs(features, inputs.scaling, None, self.device_)
        return inputs, targets, labelled, strata, weights, others.size

    @staticmethod
    def _labels_scarce(inputs, rows):
        """Whether some rows are unlabelled (or weigh 0) or the rows form a graph: the fits
        ``dropout="auto"`` regularises. ``rows``: the labelled rows of positive weight."""
        return inputs.has_graph or rows.size < inputs.n

    @property
    def _dropout_used(self):
        """The network's dropout (``dropout_``; ``dropout`` before a fit)."""
        return getattr(self, "dropout_", self.dropout)

    def _resolved_dropout(self, inputs, rows):
        """``dropout`` with ``"auto"`` resolved: scarce labels keep ``AUTO_DROPOUT``, fully
        labelled rows without a graph train without dropout."""
        if self.dropout != "auto":
            return float(self.dropout)
        return AUTO_DROPOUT if self._labels_scarce(inputs, rows) else 0.0

    def _resolved_graph_weight(self, inputs, targets, seeds):
        """``graph_weight`` with ``"auto"`` resolved by :func:`graph_helps_features` over
        the labelled rows ``seeds`` (validation rows excluded)."""
        if self.graph_weight != "auto":
            return self.graph_weight
        if not inputs.has_graph or getattr(self, "n_neighbors_", 0) or \
                inputs.n > AUTO_MAX_NODES:
            return None
        ids = inputs.row_ids
        helps, plain, smoothed = graph_helps_features(
            inputs.adjacency, inputs.scaling.transform(inputs.features), targets[seeds],
            ids[seeds], np.random.RandomState(self.seed_), classifier=is_classifier(self))
        if self.verbose:
            print(f"graph_weight='auto': a linear model scores {plain:.3f} on the features and "
                  f"{smoothed:.3f} on their average over the graph: graph term "
                  f"{'on' if helps else 'off'}")
        return None if helps else 0.0

    def _node_targets(self, data, rows):
        """{"y", "w"} over every node, holding the targets of ``rows`` only (weight 0 else)."""
        inputs, targets = data.inputs, data.targets
        ids = inputs.row_ids
        fill = -1 if targets.dtype.kind in "iu" else np.nan
        y = np.full((inputs.n,) + targets.shape[1:], fill, dtype=targets.dtype)
        w = np.zeros(inputs.n, dtype=np.float32)
        y[ids[rows]] = targets[rows]
        w[ids[rows]] = data.weights[rows]
        dev = self.device_
        return {"y": torch.as_tensor(y, device=dev), "w": torch.as_tensor(w, device=dev)}

    def _partitioned(self, inputs):
        """Whether steps run on partitions of ``batch_size`` nodes (else on all at once)."""
        return self.batch_size is not None and self.batch_size < inputs.n

    def _n_processes(self):
        """Processes that train together (those of ``accelerate launch``; 1 without)."""
        accelerator = getattr(self, "accelerator", None)
        return 1 if accelerator is None else int(accelerator.num_processes)


    def _make_datasets(self, data, train, valid):
        target = self._node_targets(data, train)
        inputs = data.inputs
        if not self._partitioned(inputs):
            if self._n_processes() > 1:
                raise ValueError(
                    f"{type(self).__name__} trains full batch (batch_size={self.batch_size!r} "
                    f"covers all {inputs.n} rows), which one process does alone, but the "
                    f"accelerator runs {self._n_processes()} processes. Set batch_size below "
                    f"{inputs.n} (e.g. {math.ceil(inputs.n / self._n_processes())}) so each "
                    "process trains its own partitions, or train without the accelerator.")
            train_ds = FullBatch(inputs, target)
            valid_ds = FullBatch(inputs, self._node_targets(data, valid)) if valid.size \
                else None
            return train_ds, valid_ds
        # the processes of a distributed fit share the seed, hence the partitions, and take
        # as many blocks each
        train_ds = Partitions(inputs, target, self.batch_size, self.seed_,
                              multiple=self._n_processes())
        # validation: a fixed partition (from the seed), scored as training sees the nodes
        valid_ds = Partitions(inputs, self._node_targets(data, valid), self.batch_size,
                              derive_seed(self.seed_, 1), reshuffle=False) if valid.size \
            else None
        return train_ds, valid_ds

    def _extra_callbacks(self, train_ds, valid_ds):
        return (("reshuffle", Reshuffle(train_ds)),)

    def _net_kwargs(self):
        # the datasets' items are whole batches
        return {"batch_size": 1, "collate_fn": first_item}

    def _n_network_outputs(self):  # pragma: no cover - the task layer's
        raise NotImplementedError

    def _build_module(self, data):
        inputs = data.inputs
        step_rows = min(inputs.n, self.batch_size or inputs.n)
        return DIFFormer(
            inputs.n_features, self._n_network_outputs(), hidden_dim=self.hidden_dim,
            n_layers=self.n_layers_, n_heads=self.n_heads, alpha=self.alpha,
            dropout=self.dropout_, kernel=self.kernel, qk_norm=self.qk_norm,
            value_projection=self.value_projection, graph_weight=self.graph_weight_,
            scope=self.attention_scope, block_size=self.block_size,
            # large steps recompute each layer in backward: same result, less memory
            checkpoint_layers=step_rows > _CHECKPOINT_ROWS,
            n_detached_outputs=self._n_variance_outputs(), linear_skip=self._linear_skip())

    def _linear_skip(self):
        """Whether the network adds a fixed linear map of the inputs to its outputs (set by
        the task's ``_init_module``; none here)."""
        return False

    def _finish_fit(self, data, train, valid):
        for name, cb in self.net_.callbacks_:  # the net keeps (and pickles) no training data
            if name == "reshuffle":
                cb.dataset = None
        inputs = data.inputs
        self.fitted_on_graph_ = data.graph is not None
        self._has_graph = inputs.has_graph
        # the weights the caches below are computed with (see _check_weights)
        self._weights_stamp = WeightsStamp(self.module_)
        with self._inference():
            outputs, summaries = self._joint_outputs(inputs, summaries=data.graph is None)
        # kept on the CPU so a model fitted on a GPU unpickles on a CPU-only machine
        self.summaries_ = [{k: v.cpu() for k, v in d.items()} for d in summaries]
        # the copy prediction reads, made now so that predict leaves __dict__ unchanged
        self._device_summaries = ((self.device_, False), summaries)
        self._summaries_on_device(float64=self._float64_inference())
        ids = inputs.row_ids
        valid = np.asarray(valid, dtype=np.intp)
        outputs = self._fallback_outputs(outputs, data, train, valid)
        self._calibrate(outputs[ids[valid]], data.targets[valid], data.continued)
        outputs = self._propagate_labels(outputs, data)
        self.transduction_ = self._predict_from_outputs(outputs)
        # features mode with a graph: predict on these rows and this graph gives the same
        # answers (_on_fitted_rows), from these outputs while the weights stay those of fit;
        # not for partial_fit's calls, which add kept rows
        self._fitted_rows_key = self._fitted_rows = self._fitted_outputs = None
        if data.graph is None and inputs.has_graph and data.extra["n_given"] is None:
            built = getattr(self, "n_neighbors_", 0) > 0
            self._fitted_rows_key = (rows_fingerprint(inputs.features),
                                     adjacency_fingerprint(inputs.adjacency), built)
            self._fitted_outputs = outputs
            if built:  # kept as LabelSpreading keeps X_ (at most 20,000 rows with 'auto')
                hashes = feature_row_hashes(inputs.features)
                order = np.argsort(hashes, kind="stable")  # a repeated row: its first copy
                self._fitted_rows = (inputs.features, hashes[order], order)
        if data.extra["n_given"] is not None:  # partial_fit's kept rows follow the call's
            self.transduction_ = self.transduction_[:data.extra["n_given"]]
        # graph mode: predictions on the fitted graph are rows of this forward
        self._graph, self._graph_outputs = (data.graph, outputs) if data.graph is not None \
            else (None, None)

    def _fallback_outputs(self, outputs, data, train, valid):
        """The fitted rows' outputs once the task has chosen between the network and a
        simpler model (the network's own here)."""
        return outputs

    def _calibrate(self, valid_outputs, valid_targets, continued=False):
        """Fit what predictions calibrate on the validation rows' outputs (the network's own,
        before any label propagation) and targets (``continued``: in a continued fit);
        nothing here."""

    def _propagate_labels(self, outputs, data):
        """The fitted rows' outputs after the task's use of the known labels (none here)."""
        return outputs

    def _checked_smoother(self, data, make, check, describe):
        """The smoother ``label_propagation`` applies, or None where it does not.

        ``make(adjacency, seed node ids, their targets)`` builds it over the labelled rows
        (:meth:`_propagation_seeds`); with ``"auto"``, ``check(smoother, random_state)``
        returns ``(decision, *figures)`` and ``describe(*figures)`` the verbose line.
        """
        seeds = self._propagation_seeds(data)
        if seeds is None:
            return None
        smoother = make(data.inputs.adjacency, seeds[1], data.targets[seeds[0]])
        if isinstance(self.label_propagation, str):  # "auto"
            helps, *figures = check(smoother, np.random.RandomState(self.seed_))
            if self.verbose:
                print(f"label_propagation='auto': {describe(*figures)}: "
                      f"{'on' if helps else 'off'}")
            if not helps:
                return None
        return smoother

    def _propagation_seeds(self, data):
        """(labelled rows, their node ids) whose labels ``label_propagation`` spreads, or
        None where it does not apply (off, no graph, or ``"auto"`` on more than
        ``AUTO_MAX_NODES`` nodes). Resets ``label_propagation_`` and the kept smoother."""
        inputs = data.inputs
        self._smoother, self.label_propagation_ = None, False
        auto = isinstance(self.label_propagation, str)  # "auto"; else a flag (numpy's too)
        if not (auto or self.label_propagation) or not inputs.has_graph:
            return None
        if auto and inputs.n > AUTO_MAX_NODES:
            if self.verbose:
                print(f"label_propagation='auto': off above {AUTO_MAX_NODES:,} nodes; pass "
                      "label_propagation=True to propagate on this graph")
            return None
        ids = inputs.row_ids
        # the rows of a validation_mask serve early stopping only: they are not seeds, so
        # their predictions (and a score on them) stay honest
        rows = data.rows if data.valid_rows is None else np.setdiff1d(data.rows,
                                                                       data.valid_rows)
        return rows, ids[rows]

    def _keep_smoother(self, smoother, data):
        """Record that the labels were propagated and keep the smoother, so that predictions
        on the fitted graph (Monte Carlo passes too) propagate as well: in graph mode the
        fitted graph's nodes; in features mode the fitted rows with the fitted graph (see
        :meth:`_on_fitted_rows`)."""
        self.label_propagation_ = True
        self._smoother = smoother

    def _with_neighbors_graph(self, inputs, labelled, reset):
        """``inputs`` with a k-nearest-neighbour graph where the task builds one (none
        here)."""
        return inputs

    def _neighbors_hint(self):
        """How else a fit gets a graph, for messages (nothing here)."""
        return ""

    def _joint_outputs(self, inputs, summaries=False):
        """(outputs of one forward over all samples (numpy float64), per-layer summaries of
        that forward or []).

        With ``batch_size`` below the number of samples and the simple kernel over all rows
        the forward runs layer by layer over chunks of ``batch_size`` rows
        (:func:`~skdiff.difformer._data.streamed_forward`: the same result in O(n hidden)
        memory, without whole-graph tensors); otherwise in one piece.
        """
        m = self.module_
        if self._partitioned(inputs) and streams(m):
            out, summ = streamed_forward(m, inputs, self.batch_size, summaries)
        else:
            out = m(inputs.x, inputs.adj)
            summ = m.summaries(inputs.x, inputs.adj) if summaries else []
        return out.double().cpu().numpy(), summ

    def fit(self, X, y, adjacency=None, *, graph=None, validation_mask=None,
            sample_weight=None):
        """Fit on the rows of ``X`` (features mode) or on the nodes of ``graph`` (graph mode).

        Parameters
        ----------
        %(fit_inputs)s

        Returns
        -------
        self : estimator
            The fitted estimator.
        """
        return self._fit(X, y, adjacency=adjacency, graph=graph,
                         validation_mask=validation_mask, sample_weight=sample_weight)

    # -- prediction ------------------------------------------------------------------------
    def _prepare_predict(self, X, adjacency=None, graph=None):
        """("cached", ids) | ("fitted", inputs) | ("joint", inputs) | ("inductive", inputs);
        see :meth:`predict` ("fitted": the rows and graph of ``fit``, :meth:`_on_fitted_rows`)."""
        check_is_fitted(self)
        self._check_predict_mode(adjacency, graph)
        if graph is not None or self.fitted_on_graph_:
            self._check_node_id_column(X, graph)
            g = self._graph if graph is None else graph
            if self._graph is not None and getattr(g, "_token", None) == self._graph._token:
                g = self._graph  # the fitted graph, also as a copy from a pickle round trip
            if g is self._graph:
                X = validate_data(self, X, dtype=None, reset=False)
                return "cached", GraphInputs(None, ids=check_node_ids(X, g.n_nodes)), g
            return "joint", self._inputs(X, None, g, reset=False), g
        inputs = self._inputs(X, adjacency, None, reset=False)
        fitted = self._on_fitted_rows(inputs)
        if fitted is not None:
            return "fitted", fitted[0], fitted[1:]
        key = getattr(self, "_graph_rows_key", None)  # absent from older pickles
        if adjacency is None and key is not None \
                and rows_fingerprint(inputs.features) == key:
            warnings.warn(
                f"X holds the rows {type(self).__name__} was fitted on with an adjacency, "
                "but predict received none, so every row is a new node without edges that "
                "attends to the training rows only. Pass the same adjacency to predict for "
                "one forward over the graph, or read transduction_ (the fitted rows' "
                "predictions, after label_propagation); silence this warning if isolated "
                "nodes are meant.", UserWarning, stacklevel=caller_stacklevel())
        return ("joint" if adjacency is not None else "inductive"), inputs, None

    def _on_fitted_rows(self, inputs):
        """``(inputs over the fitted graph, positions, other rows)`` where the rows of X are
        nodes of a features-mode ``fit`` with a graph, else None.

        With an adjacency, X must hold the fitted rows (:func:`rows_fingerprint`) and the
        adjacency be the fitted one, entry for entry (:func:`adjacency_fingerprint`):
        ``(inputs, None, None)``. Where ``fit`` built the k-nearest-neighbour graph itself
        and no adjacency is given, every row of X equal to a fitted row (kept, with their
        :func:`~skdiff._rows.feature_row_hashes`) is that node: ``(None, the fitted
        position of every row of X (-1: a new row), the new rows' inputs or None)``, the
        fitted rows' inputs built only where :meth:`_outputs` runs a forward
        (:meth:`_kept_graph_inputs`). The known labels belong to these nodes, so their
        predictions are ``transduction_``'s (:meth:`_outputs`).
        """
        key = self.__dict__.get("_fitted_rows_key")  # absent from older pickles
        if key is None:
            return None
        edges, built = key[1:]
        if not inputs.has_graph:
            kept = self.__dict__.get("_fitted_rows")
            if not built or kept is None or inputs.n == 0:
                return None
            _, sorted_hashes, order = kept
            hashes = feature_row_hashes(inputs.features)
            at = np.minimum(np.searchsorted(sorted_hashes, hashes), sorted_hashes.size - 1)
            hit = sorted_hashes[at] == hashes
            if not hit.any():
                return None
            positions = np.where(hit, order[at], -1)
            new = None if hit.all() else dataclasses.replace(
                inputs, features=inputs.features[np.flatnonzero(~hit)], _tensors={})
            return None, positions, new
        if rows_fingerprint(inputs.features) != key[0] \
                or adjacency_fingerprint(inputs.adjacency) != edges:
            return None
        return inputs, None, None

    def _kept_graph_inputs(self):
        """The kept fitted rows with their k-nearest-neighbour graph built again (already
        validated and scaled as in ``fit``)."""
        features = self._fitted_rows[0]
        return self._with_neighbors_graph(
            GraphInputs(features, self._feature_scaling, None, self.device_), None,
            reset=False)

    def _check_node_id_column(self, X, graph):
        """Refuse feature rows where graph mode takes node ids (one column), naming the
        mode rather than scikit-learn's feature count."""
        shape = X.shape if hasattr(X, "shape") else np.shape(X)
        if len(shape) != 2 or shape[1] == 1:
            return
        how = ("was fitted in graph mode (fit(..., graph=g))" if graph is None else
               "predicts on a graph (graph=...)")
        raise ValueError(
            f"{type(self).__name__} {how}, so X holds node ids, one column; got X of shape "
            f"{tuple(shape)}, which looks like feature rows. Pass node ids of the graph "
            "(g.node_ids(), or a subset of its rows), with graph=Graph(features, adjacency) "
            "for another graph; to predict on feature rows, fit with X as features (and "
            "adjacency=A) instead.")

    def _check_predict_mode(self, adjacency, graph):
        """Refuse an ``adjacency`` beside ``graph``, given to a model fitted in graph mode
        (whose ``X`` holds node ids, not feature rows an adjacency could join), or given to
        a model fitted without a graph (whose network has no trained graph term)."""
        check_not_bool(adjacency)
        if graph is not None and adjacency is not None:
            raise ValueError("Pass either 'graph' (graph mode, X = node ids) or 'adjacency' "
                             "(features mode), not both.")
        if adjacency is not None and self.fitted_on_graph_:
            raise ValueError(
                f"{type(self).__name__} was fitted in graph mode (fit(..., graph=g)), so X "
                "holds node ids and the edges come from a Graph; got an 'adjacency'. Leave "
                "adjacency=None to predict on the fitted graph's nodes, or pass "
                "graph=Graph(features, adjacency) for another graph. To predict on feature "
                "rows joined by an adjacency, fit with X as features and adjacency= instead.")
        if adjacency is not None and not self.__dict__.get("_has_graph", True):
            # the graph term (with every row's self-loop) would enter a network that never
            # trained with one: even an empty adjacency would change its predictions
            knn = " (or n_neighbors, a k-nearest-neighbour graph)" \
                if "n_neighbors" in self.get_params(deep=False) else ""
            raise ValueError(
                f"{type(self).__name__} was fitted without a graph, so its network has no "
                "trained graph term; got an 'adjacency'. Leave adjacency=None to predict "
                "each row from the training rows, or fit with an adjacency among the "
                f"training rows{knn} to predict with one.")

    def _outputs(self, prepared, mc=False):
        mode, inputs, extra = prepared
        if mode != "fitted":
            return self._task_outputs(prepared, mc)
        # the fitted nodes: fit's forward over the fitted graph, the known labels propagated;
        # run again for Monte Carlo passes and where the weights changed after fit (which
        # does not renew the stamp: inductive predictions still need fit's summaries)
        stamp = self.__dict__.get("_weights_stamp")
        out = self.__dict__.get("_fitted_outputs")  # absent from older pickles
        if mc or out is None or stamp is None or not stamp.matches(self.module_):
            if inputs is None:
                inputs = self._kept_graph_inputs()
            out = self._smoothed(self._task_outputs((mode, inputs, None), mc))
        positions, new = extra
        if positions is None:  # X is the fitted rows, in order
            return out
        hit = positions >= 0
        res = np.empty((positions.size, out.shape[1]))
        res[hit] = out[positions[hit]]
        if new is not None:  # rows of X that are not fitted rows: new, isolated nodes
            res[~hit] = self._task_outputs(("inductive", new, None), mc)
        return res

    def _task_outputs(self, prepared, mc=False):
        """The outputs before the propagation of the fitted labels over the fitted rows
        (the network's here; the regressor's may come from its ridge)."""
        return self._network_outputs(prepared, mc)

    def _network_outputs(self, prepared, mc=False):
        mode, inputs, graph = prepared
        if mode == "cached":
            if not mc:
                self._check_weights()
                return self._graph_outputs[inputs.ids]
            inputs = self._inputs(inputs.ids.reshape(-1, 1), None, graph, reset=False)
            return self._smoothed(self._joint_outputs(inputs)[0])[inputs.ids]
        if mode == "fitted":  # the task propagates the labels on top (_smoothed)
            return self._joint_outputs(inputs)[0]
        if mode == "joint":
            out = self._joint_outputs(inputs)[0]
            return out if inputs.ids is None else out[inputs.ids]
        self._check_weights()
        exact = self._float64_inference()  # a row's prediction independent of the others
        m = float64_copy(self.module_) if exact else self.module_
        chunk = self.batch_size or _PREDICT_CHUNK
        summaries = self._summaries_on_device(float64=exact)
        out = np.empty((inputs.n, self._n_network_outputs()))
        for i in range(0, inputs.n, chunk):  # chunks of rows, not samples
            rows = inputs.rows(i, i + chunk)
            z = m.forward_inductive(rows.double() if exact else rows, summaries,
                                    graph=self._has_graph)
            out[i:i + chunk] = z.double().cpu().numpy()
        return out

    def _check_weights(self):
        """Keep the caches of ``fit`` in step with the network's weights, which may change
        after it (``net_.load_params`` restoring a skorch ``Checkpoint``, say).

        In graph mode the fitted graph is kept, and its full-graph forward is recomputed
        with the current weights. The inductive ``summaries_`` need the training rows,
        which are not kept: predicting from them with other weights would mix two networks,
        so that is an error.
        """
        stamp = self.__dict__.get("_weights_stamp")  # absent from older pickles
        if stamp is None or stamp.matches(self.module_):
            return
        g = self.__dict__.get("_graph")
        if g is not None:
            full = self._inputs(g.node_ids(), None, g, reset=False)
            self._graph_outputs = self._smoothed(self._joint_outputs(full)[0])
            self._weights_stamp = WeightsStamp(self.module_)
            return
        raise RuntimeError(
            f"The weights of {type(self).__name__}'s network changed after fit (e.g. by "
            "net_.load_params), but inductive prediction attends to summaries_, the "
            "training rows' state computed with the fitted weights, which cannot be "
            "recomputed without those rows. Refit (to end a fit on a skorch Checkpoint's "
            "weights, pass Checkpoint(load_best=True) in callbacks), or move the whole "
            "fitted estimator (save/load or pickle) rather than the network's weights.")

    def _smoothed(self, outputs):
        """Outputs over the fitted graph with the fitted labels propagated, if they were."""
        return outputs

    def _summaries_on_device(self, float64=False):
        """``summaries_`` on ``device_`` (floating tensors in float64 with ``float64``), kept
        until the device or the precision changes, so Monte Carlo draws reuse them."""
        key = (self.device_, float64)
        cached = self.__dict__.get("_device_summaries")
        if cached is None or cached[0] != key:
            moved = [{k: v.to(self.device_, torch.float64) if float64 and v.is_floating_point()
                      else v.to(self.device_) for k, v in d.items()} for d in self.summaries_]
            cached = self._device_summaries = (key, moved)
        return cached[1]

    def attention_graph(self, X, adjacency=None, *, k=10, layer=-1, graph=None):
        """The learned dependency structure: top-``k`` attention weights of every row.

        Computed from a joint forward over the rows of X (or the whole graph in graph mode),
        heads averaged, in row blocks (O(block_size * n) memory).

        Parameters
        ----------
        %(predict_inputs)s
        k : int, default=10
            Weights kept per row (at most the number of rows).
        layer : int, default=-1
            Which layer's attention, ``-n_layers <= layer < n_layers`` (negative counts from
            the last).

        Returns
        -------
        S : scipy.sparse.csr_matrix of shape (n_rows, n_rows)
            ``S[i, j]`` = weight with which row i attends to row j, for its ``k`` largest
            (rows of ``X``; in graph mode rows are the given node ids, columns all nodes).
        """
        check_is_fitted(self)
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"'k' must be an integer >= 1; got {k!r}.")
        n_layers = self.module_.n_layers
        if isinstance(layer, bool) or not isinstance(layer, numbers.Integral) \
                or not -n_layers <= layer < n_layers:
            raise ValueError(f"'layer' must be an integer in [{-n_layers}, {n_layers}) for a "
                             f"network of {n_layers} layers; got {layer!r}.")
        self._check_predict_mode(adjacency, graph)
        if graph is not None or self.fitted_on_graph_:
            self._check_node_id_column(X, graph)
            g = self._graph if graph is None else graph
            inputs = self._inputs(X, None, g, reset=False)
            inputs.ids, ids = None, inputs.ids
        else:
            inputs, ids = self._inputs(X, adjacency, None, reset=False), None
        with self._inference() as m:
            idx, val = m.attention_graph(inputs.x, inputs.adj, layer=layer, k=k,
                                         block_size=self.block_size)
        n = inputs.n
        rows = np.repeat(np.arange(n), idx.shape[1])
        S = sp.csr_matrix((val.cpu().numpy().ravel(), (rows, idx.cpu().numpy().ravel())),
                          shape=(n, n))
        S.eliminate_zeros()  # with attention_scope="graph", a row's weights off its edges
        return S if ids is None else S[ids]

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_device_summaries", None)  # device copies of summaries_: rebuilt on demand
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class _ValidAccuracy(Callback):
    """Records ``valid_acc`` (accuracy on the labelled validation rows) and ``valid_score``.

    ``valid_score`` is the early-stopping monitor: the accuracy, ties broken by the lower
    validation loss. The loss term is below half of one validation row's worth of accuracy,
    so one more correct row always wins; with small validation sets, where many epochs tie,
    it picks the better-calibrated epoch instead of the first one.
    """

    def on_epoch_begin(self, net, **kwargs):
        self.correct, self.total, self.loss = 0.0, 0.0, 0.0

    def on_batch_end(self, net, batch=None, training=None, y_pred=None, loss=None, **kwargs):
        if training or y_pred is None:
            return
        y, w = batch[1]["y"].to(y_pred.device), batch[1]["w"].to(y_pred.device)
        w = torch.where(y >= 0, w, torch.zeros_like(w))
        self.correct += float(((y_pred.argmax(1) == y) * w).sum())
        self.total += float(w.sum())
        self.loss += float(loss) * float(w.sum())

    def scores(self):
        """(accuracy, early-stopping score) of the rows seen since the epoch began."""
        acc = self.correct / self.total
        return acc, acc - 0.5 / self.total * np.tanh(self.loss / self.total)

    def on_epoch_end(self, net, **kwargs):
        if self.total > 0:
            acc, score = self.scores()
            net.history.record("valid_acc", acc)
            net.history.record("valid_score", score)


def _valid_score(net, dataset_valid):
    """The ``valid_score`` (:class:`_ValidAccuracy`) of the net's current weights on
    ``dataset_valid``, without an update or a history record."""
    accuracy = _ValidAccuracy()
    accuracy.on_epoch_begin(net)
    for batch in net.get_iterator(dataset_valid, training=False):
        step = net.validation_step(batch)
        accuracy.on_batch_end(net, batch=batch, training=False, y_pred=step["y_pred"],
                              loss=step["loss"])
    return accuracy.scores()[1] if accuracy.total > 0 else np.nan


@fill_doc(DIFFORMER_DOCS)
class DIFFormerClassifier(ClassifierTask, _DIFFormerBase):
    """DIFFormer: a Transformer whose layers diffuse information among all samples.

    Every layer moves each sample towards an attention-weighted mean of *all* samples (and of
    its graph neighbours when an adjacency is given), one explicit-Euler step of an
    energy-constrained diffusion (Wu et al., 2023). Rows labelled ``unlabelled`` (``-1`` by
    default) take part in the attention but not in the loss (semi-supervised learning).

    Early stopping holds out a stratified random ``validation_fraction`` of the labelled rows
    (they stay in the attention, unlabelled), or the rows of ``fit(..., validation_mask=...)``,
    and keeps the epoch with the best validation accuracy (ties go to the lower validation
    loss), as the official code keeps its best-validation epoch.

    Parameters
    ----------
    %(network_parameters)s
    unlabelled : int, str or None, default=-1
        The label that marks unlabelled rows (scikit-learn's semi-supervised convention).
        ``None``: every row is labelled, so ``-1`` is an ordinary class. A warning is given
        when the marked rows look like a genuine class: about as frequent as the classes
        (e.g. labels ``{-1, 1}``), not a few marked rows among many labelled ones.
    %(class_weight)s
    n_neighbors : "auto", int or None, default="auto"
        A graph for a fit without one: the ``n_neighbors`` nearest neighbours of every row
        (Euclidean, on the scaled features, symmetrised) become its edges, as the paper
        builds k-NN graphs for its image and text data. The graph enters the network's graph
        term and ``label_propagation``. The fitted rows are kept (as ``LabelSpreading``
        keeps ``X_``): a row given to ``predict`` equal to one of them is that node,
        predicted as in ``transduction_``; other rows are new, isolated nodes.
        ``"auto"``: a 10-NN graph (at most ``n_samples - 1`` neighbours) for
        semi-supervised fits (some rows unlabelled, or of weight 0) and for
        ``attention_scope="graph"``, which attends along its edges, of at most 20,000 rows,
        none otherwise; an int: always without a given graph; ``None``: never. A given
        ``adjacency`` or ``graph`` always takes precedence.
    label_propagation : "auto" or bool, default="auto"
        With a graph, spread the known labels along its edges on top of the network's
        predictions for the fitted rows (the smoothing step of Correct and Smooth, Huang et
        al., 2021; the iteration of :class:`~sklearn.semi_supervised.LabelSpreading` started
        from the network's class probabilities, labelled rows clamped). It changes
        ``transduction_`` and the predictions on the fitted nodes (including
        :meth:`sample_posterior`): in graph mode the fitted graph's nodes, in features mode
        the rows of ``fit`` with its adjacency (or, with none where ``fit`` built the
        nearest-neighbour graph, any fitted row); predictions on new rows or another graph are
        the network's alone, since no labels are known there. The rows of
        ``fit(..., validation_mask=...)`` are not propagated (they serve early stopping
        only). ``"auto"``: on when labels
        spread along the graph predict held-out labelled nodes (a 5-fold check over the
        labelled nodes) better than the most frequent class does, i.e. when the graph is
        homophilous, unless a logistic regression on the features alone predicts them
        better (more of the same labelled nodes): there the propagation would replace good
        predictions by the neighbours' labels. Off on
        heterophilous graphs and on graphs of more than a million nodes (where the checks
        take minutes). ``True``: always with a graph. ``False``: never.
        Without a graph it has no effect. The weight of the network's probabilities
        in the propagation is ``propagation_network_weight``.
    propagation_alpha : float in [0, 1), default=0.9
        Weight of the neighbours in each propagation step (``alpha`` of
        :class:`~sklearn.semi_supervised.LabelSpreading`); ``1 - propagation_alpha`` pulls
        every node back towards the network's prediction.
    propagation_network_weight : float in [0, 1] or "auto", default="auto"
        Weight of the network's class probabilities in the propagation's start and restart
        term, against the clamped labels: 1 spreads the labels on top of the network's
        predictions, 0 ignores the network (plain label spreading over the graph).
        ``"auto"`` chooses among 1, 0.5, 0.2 and 0 by a 5-fold check over the labelled
        nodes, each predicted with its label and the network's outputs on it and its
        neighbours hidden (the network was trained on it): where the features say little,
        the network's guesses on unlabelled nodes get less weight. With about a hundred
        labelled nodes on a graph of many thousands the check's choice is noisy;
        ``propagation_network_weight_`` says what it chose, and a number fixes it (e.g. 0
        where the features are known to carry little). Used only where the labels are
        propagated.
    weight_averaging : bool, default=False
        Where training runs all its epochs (no early stopping: the default below 10,000
        labelled rows), predict with an exponential moving average of the weights over
        about the last twentieth of the epochs (:class:`skdiff.callbacks.WeightAveraging`,
        decay ``1 - 15 / max_epochs``) instead of the last epoch's (or those
        :class:`~skdiff.callbacks.RestoreLowestLoss` restores), unless the average has
        the higher training loss without dropout (a run that still learnt late): that
        weighs against where in the noise of the last epochs the run happened to stop.
        ``weights_averaged_`` records the outcome. With early stopping the best epoch's
        weights are kept and nothing is averaged. It lowers the spread over seeds on Cora
        (test accuracy 0.826 ± 0.004 against 0.825 ± 0.006; with ``logistic_start=False``
        0.815 ± 0.007 against 0.812 ± 0.013), made no difference on
        average on the development rows of the defaults benchmark and lost 3 to 8 points
        on three of its held-out semi-supervised rows with few labels, so it is not the
        default (see the user guide).
    logistic_start : bool or "auto", default="auto"
        Start the logits at a logistic regression on the scaled features, the linear model
        a user would otherwise fit (L2 penalty of the best log-loss over stratified folds
        of the training rows, ``logistic_C_``; at most 10,000 rows), kept fixed, with the
        network's output layer started at zero: the network learns a correction to the
        linear model's logits, as :class:`~skdiff.FlowformerClassifier` does by default.
        The linear model reads the features alone; the graph enters through the network
        and ``label_propagation``. ``"auto"``: on for bag-of-words features, i.e. where
        ``feature_scaling_`` is ``"row"`` (with ``feature_scaling="auto"``: non-negative
        sparse features whose columns share one scale), off otherwise. On the three such
        rows of the defaults benchmark it raised the ratio to the best baseline (mean over
        ``random_state`` 0-2): Cora's public split 0.977 to 0.999 (test accuracy 0.806 to
        0.824), block models with bag-of-words features 1.008 to 1.059 (homophily 0.6) and
        1.012 to 1.024 (0.8). On dense features it is no default: block models whose
        features say little beside the graph lost with it (10,000 nodes, 100 labelled:
        0.801 to 0.755), and over the other rows refitted with five seeds it lowered the
        geometric mean of the ratio and lost more held-out fits (the DIFFormer benchmark
        page has the table). ``True``: always; ``False``: the network alone (the paper's
        model).
    %(training_parameters)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels (the unlabelled marker is not one).
    transduction_ : ndarray of shape (n_fitted_rows,)
        Predicted label of every row seen in ``fit`` (every node of the graph in graph mode),
        after ``label_propagation`` when it applies.
    n_neighbors_ : int
        The k of the nearest-neighbour graph built in ``fit`` (0: none was built).
    label_propagation_ : bool
        Whether the labels were propagated over the graph (see ``label_propagation``).
    propagation_network_weight_ : float or None
        The weight of the network's probabilities in the propagation
        (``propagation_network_weight`` with ``"auto"`` resolved); None where the labels
        were not propagated.
    weights_averaged_ : bool
        Whether the network predicts with the average of its last epochs' weights (see
        ``weight_averaging``).
    logistic_start_ : bool
        Whether the logits start at a logistic regression (``logistic_start`` with
        ``"auto"`` resolved).
    logistic_C_ : float or None
        Inverse L2 penalty of the logistic regression the logits start at (``None`` without
        that start, or with a class without training rows).
    %(input_attributes)s
    init_scores_ : ndarray of shape (n_init,)
        Minus the best validation score of every initialisation (lower is better; without
        validation rows, the training loss, without dropout, of the weights it ends on).
    %(network_attributes)s

    Notes
    -----
    The defaults (4 layers, hidden 64, ``dropout="auto"``, ``lr=3e-3``,
    ``weight_decay=5e-3``, 300 epochs; early stopping after 50 epochs without improvement
    only from 10,000 labelled rows or with a ``validation_mask``; ``n_neighbors="auto"``;
    ``graph_weight="auto"``; ``label_propagation="auto"`` with ``propagation_alpha=0.9``)
    were chosen on a suite of tabular data sets and graphs against scikit-learn baselines
    (``benchmarks/defaults.py``). The official recipe for
    citation graphs with the public validation nodes is ``n_layers=8, lr=1e-3,
    weight_decay=0.01, max_epochs=500, n_iter_no_change=500, graph_weight=None,
    label_propagation=False, logistic_start=False`` with ``validation_mask``;
    the benchmark pages give the accuracy measured with it beside the paper's.

    See Also
    --------
    DIFFormerRegressor : the same network for regression.
    sklearn.semi_supervised.LabelSpreading : graph-based semi-supervised classification.
    skdiff.Graph : a whole graph for cross-validation with node ids as ``X``.

    References
    ----------
    %(references)s

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from skdiff import DIFFormerClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DIFFormerClassifier(n_layers=2, max_epochs=60, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **_DIFFormerBase._parameter_constraints,
        "unlabelled": [numbers.Integral, str, None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "n_neighbors": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None,
                                                      closed="left"), None],
        "label_propagation": [StrOptions({"auto"}), "boolean"],
        "propagation_alpha": [Interval(numbers.Real, 0, 1, closed="left")],
        "propagation_network_weight": [Interval(numbers.Real, 0, 1, closed="both"),
                                       StrOptions({"auto"})],
        "weight_averaging": ["boolean"],
        "logistic_start": ["boolean", StrOptions({"auto"})],
    }

    _WARM_START_FREE = _DIFFormerBase._WARM_START_FREE | {"weight_averaging"}

    def __init__(self, *, feature_scaling="auto", kernel="simple", qk_norm="global",
                 n_layers="auto", hidden_dim=64, n_heads=1, alpha=0.5, dropout="auto",
                 graph_weight="auto", value_projection=False, attention_scope="all",
                 block_size=1024, unlabelled=-1, class_weight=None, n_neighbors="auto",
                 label_propagation="auto",
                 propagation_alpha=0.9, propagation_network_weight="auto",
                 weight_averaging=False, logistic_start="auto",
                 max_epochs=300, lr=3e-3, weight_decay=5e-3, batch_size=None, early_stopping="auto",
                 validation_fraction=0.1, n_iter_no_change=50, n_init=1,
                 warm_start=False, device="auto", n_threads=None, mixed_precision=None,
                 accelerator=None, random_state=None, verbose=0, callbacks=None):
        self._init_params(locals())

    def _unlabelled_marker(self):
        marker = self.unlabelled
        if isinstance(marker, (bool, np.bool_)):
            raise ValueError(f"'unlabelled' marks unlabelled rows by a label value, not a "
                             f"flag; got {marker!r} (which equals the label {int(marker)}). Pass "
                             "the marker label (e.g. -1), or None for fully labelled data.")
        return marker

    def _n_network_outputs(self):
        return self.classes_.size

    def _with_neighbors_graph(self, inputs, labelled, reset):
        """A symmetrised ``n_neighbors_``-nearest-neighbour graph over the scaled rows of a
        semi-supervised fit without a graph (``n_neighbors``)."""
        if reset:
            k = self.n_neighbors
            if k == "auto":
                # scarce labels, or attention that runs along edges only
                wanted = not labelled.all() or self.attention_scope == "graph"
                # at most n - 1 neighbours: a small fit gets the graph of all its rows
                k = (min(AUTO_NEIGHBORS, inputs.n - 1)
                     if wanted and inputs.n <= AUTO_NEIGHBORS_MAX_ROWS else 0)
            self.n_neighbors_ = 0 if inputs.has_graph or k is None else int(k)
        k = getattr(self, "n_neighbors_", 0)
        if inputs.has_graph or not k:
            return inputs
        if k >= inputs.n:
            raise ValueError(f"n_neighbors={k} needs more than {k} rows; X has {inputs.n}. "
                             "Pass a smaller n_neighbors or None.")
        A = kneighbors_graph(inputs.scaling.transform(inputs.features), k,
                             include_self=False)
        return dataclasses.replace(inputs, adjacency=check_adjacency(A, inputs.n),
                                   _tensors={})

    def _neighbors_hint(self):
        return ", or set n_neighbors to an int (a k-nearest-neighbour graph built by fit)"

    def _labels_beat_features(self, smoother, random_state, data):
        """``label_propagation="auto"``'s check: ``(decision, accuracy of the labels spread
        along the graph, of the most frequent class, of a linear model on the features)``
        at held-out labelled nodes (:meth:`LabelSmoother.spread_hits`,
        :func:`features_hits`). On when the spread labels beat the most frequent class,
        unless the linear model beats them by more than ``PROPAGATION_N_SE`` (0) standard
        errors of the mean per-node difference: then the propagation would override the network's
        predictions with its neighbours' labels where the features tell more."""
        majority = float(smoother.onehot.sum(0).max() / smoother.seeds.size)
        spread = smoother.spread_hits(random_state)
        if spread is None:
            return False, float("nan"), majority, float("nan")
        inputs = data.inputs  # only the labelled nodes' rows are scaled
        found = features_hits(inputs.features, smoother.onehot.argmax(1), smoother.seeds,
                              random_state, transform=inputs.scaling.transform)
        accuracy = float(spread.mean())
        if found is None:
            return accuracy > majority, accuracy, majority, float("nan")
        index, hits = found
        w = np.full(index.size, 1.0 / index.size)
        features_better = beats_by_se(1.0 - hits, 1.0 - spread[index], w,
                                      n_se=PROPAGATION_N_SE)[0]
        return accuracy > majority and not features_better, accuracy, majority, \
            float(hits.mean())

    def _propagate_labels(self, outputs, data):
        """Spread the fitted labels over the graph (``label_propagation``), see
        :mod:`skdiff.difformer._propagation`."""
        smoother = self._checked_smoother(
            data, lambda A, seeds, codes: LabelSmoother(A, seeds, codes, self.classes_.size,
                                                        self.propagation_alpha),
            lambda smoother, random_state: self._labels_beat_features(
                smoother, random_state, data),
            lambda accuracy, majority, features: f"labels spread along the graph predict "
            f"{accuracy:.3f} of held-out labelled nodes, the most frequent class "
            f"{majority:.3f}, a linear model on the features {features:.3f}")
        self.propagation_network_weight_ = None
        if smoother is None:
            return outputs
        proba = self._from_outputs(outputs)
        if self.propagation_network_weight == "auto":
            beta = smoother.choose_network_weight(proba, np.random.RandomState(self.seed_))
        else:
            beta = smoother.beta = float(self.propagation_network_weight)
        self.propagation_network_weight_ = beta
        if self.verbose:
            print(f"label_propagation: the network's weight in the propagation is {beta}")
        self._keep_smoother(smoother, data)
        return self._log_proba(smoother.smooth(proba))

    @staticmethod
    def _log_proba(proba):
        """Probabilities as outputs: the softmax of their logarithm gives them back."""
        return np.log(np.maximum(proba, 1e-300))

    def _smoothed(self, outputs):
        smoother = self.__dict__.get("_smoother")
        if smoother is None:
            return outputs
        return self._log_proba(smoother.smooth(self._from_outputs(outputs)))

    def _linear_skip(self):
        if isinstance(self.logistic_start, str):  # "auto": on bag-of-words features
            return self.feature_scaling_ == "row"
        return bool(self.logistic_start)

    def _init_module(self, module, data, train, valid):
        """Start the logits at a logistic regression on the scaled features
        (``logistic_start``).

        :meth:`~skdiff._tasks.ClassifierTask._logistic_start` fits it on the training rows
        (at most ``LOGISTIC_START_ROWS``), its penalty chosen by stratified
        cross-validation; it is computed once per fit, copied into every initialisation of
        ``n_init`` and kept fixed, and the output layer starts at zero, so the network
        starts as the linear model a user would otherwise fit and learns a correction to
        its logits. ``logistic_C_`` records the penalty (``None`` without that start).
        """
        self.logistic_C_ = None
        self.logistic_start_ = module.skip is not None
        if module.skip is None:
            return
        if "skip_start" not in data.extra:
            inputs = data.inputs
            data.extra["skip_start"] = self._logistic_start(
                data, train, lambda rows: inputs.scaled_features(inputs.row_ids[rows]))
        if data.extra["skip_start"] is None:  # a class without training rows
            return
        weight, bias, self.logistic_C_ = data.extra["skip_start"]
        module.set_skip_(weight, bias)
        with torch.no_grad():
            module.fc_out.weight.zero_()
            module.fc_out.bias.zero_()

    def _monitor(self):
        return "valid_score", False

    def _start_measure(self, monitor):
        return _valid_score if monitor == "valid_score" else super()._start_measure(monitor)

    def _finish_fit(self, data, train, valid):
        averaging = dict(self.net_.callbacks_).get("weight_averaging")
        self.weights_averaged_ = bool(averaging is not None and averaging.averaged_)
        super()._finish_fit(data, train, valid)

    def _extra_callbacks(self, train_ds, valid_ds):
        cbs = super()._extra_callbacks(train_ds, valid_ds)
        if valid_ds is not None:
            cbs += (("valid_acc", _ValidAccuracy()),)
        if self.weight_averaging and not self.early_stopping_:
            # early stopping restores its best epoch instead: the two do not combine
            cbs += (("weight_averaging", WeightAveraging()),)
        return cbs

    def partial_fit(self, X, y, classes=None, adjacency=None, *, graph=None,
                    validation_mask=None, sample_weight=None):
        """Train one more epoch, starting from the current weights (or from scratch if unfitted).

        %(partial_fit_summary)s

        ``classes`` comes third, as in scikit-learn's ``partial_fit(X, y, classes)``.

        Parameters
        ----------
        %(X)s
        %(y)s
        %(classes)s
        %(adjacency)s
        %(graph)s
        %(validation_mask)s
        %(sample_weight)s

        Returns
        -------
        self : DIFFormerClassifier
            The estimator, trained one more epoch.
        """
        return self._fit(X, y, partial=True, adjacency=adjacency, graph=graph,
                         validation_mask=validation_mask, sample_weight=sample_weight,
                         classes=classes, keep_rows=True)

    def predict_proba(self, X, adjacency=None, *, graph=None):
        """Class probabilities of the rows of X, shape (n_rows, n_classes).

        %(predict_modes)s

        Parameters
        ----------
        %(predict_inputs)s

        Returns
        -------
        proba : ndarray of shape (n_rows, n_classes)
            Probability of every class (columns in the order of ``classes_``); rows sum
            to 1.
        """
        return super().predict_proba(X, adjacency=adjacency, graph=graph)

    def predict(self, X, adjacency=None, *, graph=None):
        """Predicted labels, shape (n_rows,): the most probable class of every row.

        %(predict_modes)s

        Parameters
        ----------
        %(predict_inputs)s

        Returns
        -------
        y_pred : ndarray of shape (n_rows,)
            The label of ``classes_`` with the highest probability.
        """
        return super().predict(X, adjacency=adjacency, graph=graph)

    def score(self, X, y, sample_weight=None, *, adjacency=None, graph=None):
        """Accuracy of :meth:`predict` on the labelled rows of ``y`` (rows marked
        ``unlabelled`` are left out, so a cross-validation over semi-supervised targets
        scores only the rows whose label is known).

        %(score_routing)s

        Parameters
        ----------
        %(X)s
        y : array-like of shape (n_samples,)
            True labels; rows marked ``unlabelled`` are not scored.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-row weight of the accuracy.
        %(adjacency)s
        %(graph)s

        Returns
        -------
        score : float
            The (weighted) fraction of labelled rows predicted right.
        """
        return super().score(X, y, sample_weight=sample_weight, adjacency=adjacency,
                             graph=graph)


@fill_doc(DIFFORMER_DOCS)
class DIFFormerRegressor(RegressorTask, _DIFFormerBase):
    r"""DIFFormer for regression: samples diffuse information among each other.

    The network of :class:`DIFFormerClassifier` with a linear regression head, trained by
    mean squared error on standardised targets (the paper also applies DIFFormer to
    regression, e.g. spatio-temporal dynamics). Rows whose target is ``NaN`` are unlabelled:
    they take part in the attention but not in the loss (the regression analogue of the
    classifier's ``-1``). By default the head predicts a Gaussian per row and output (a mean
    and a variance), and ``predict(return_std=True)`` and :meth:`sample_posterior` use it
    under Monte Carlo dropout (``uncertainty``).

    Early stopping holds out a random ``validation_fraction`` of the labelled rows (they stay
    in the attention, unlabelled), or the rows of ``fit(..., validation_mask=...)``, and keeps
    the epoch with the lowest validation loss.

    With a graph, the known values can be spread along its edges on top of the network's
    predictions for the fitted rows (``label_propagation=True``).

    Parameters
    ----------
    %(network_parameters)s
    label_propagation : bool or "auto", default=False
        With a graph, spread the known values along its edges on top of the network's
        predictions for the fitted rows: the smoothing step of Correct and Smooth (Huang et
        al., 2021) on the standardised predictions, labelled rows clamped to their values,
        as :class:`DIFFormerClassifier` does with class probabilities. It changes
        ``transduction_`` and the predictions on the fitted nodes (including
        ``return_std`` and :meth:`sample_posterior`): in graph mode the fitted graph's
        nodes, in features mode the rows of ``fit`` with its adjacency; predictions on new
        rows or another graph are the network's alone. The rows of ``fit(..., validation_mask=...)``
        are not propagated. ``True``: with any graph. ``"auto"``: only when values spread
        along the graph predict held-out labelled nodes better than the mean of the others
        does (a 5-fold check over the labelled nodes, a kernel regression over the graph),
        i.e. when neighbours have similar values, and on graphs of at most a million nodes.
        ``False`` (default): never. It helps where the network's predictions are noisy and
        neighbours share values (contextual stochastic block models with 100 labelled nodes
        of 2,000); on a homophilous graph whose features already tell the values it blurs
        good predictions across the edges that join different values, which is why it is
        off by default. Without a graph it has no effect.
    propagation_alpha : float in [0, 1), default=0.5
        Weight of the neighbours in each propagation step; ``1 - propagation_alpha`` pulls
        every node back towards the network's prediction. Shorter than the classifier's
        0.9: values are averaged as they are (an argmax of probabilities is not), and a long
        propagation pulls every node towards the mean of a wide neighbourhood.
    linear_fallback : bool or "auto", default="auto"
        Whether the network learns a correction to a ridge regression, and predictions
        fall back on the ridge alone where the correction does not predict the validation
        rows better. A :class:`~sklearn.linear_model.RidgeCV` (penalties ``1e-3`` to
        ``1e3``, chosen by leave-one-out) is fitted to the labelled training rows on the
        features the network reads; the network is trained on its residuals (on the
        training rows their leave-one-out values, what the ridge gets wrong on rows it has
        not seen), divided by their standard deviation there, and predicts the ridge's mean
        plus its correction, with the Gaussian head's variance that of the residuals (as
        :class:`~skdiff.FlowformerRegressor`'s window skip). With 20 validation rows or
        more a second network, from the same seed, learns the targets themselves, kept
        instead only if it predicts the validation rows better than the ridge plus the
        correction by more than one standard error of the mean per-row difference (the
        one-standard-error rule of penalised regression; ``network_target_``): a
        correction learns the nonlinear part of a target whose
        linear part the network would otherwise have to find in few rows, while with many
        rows a network on the targets can learn more (twice the training time). After
        training the network is kept only if it lowers the validation rows' mean squared
        error below the ridge's by more than two standard errors: its epoch was chosen on
        those rows, which makes its error there optimistic (``FALLBACK_MARGIN_SE``). Given an
        adjacency the ridge reads beside the features their 2-hop SGC average over the
        graph (Wu et al., 2019: the linear model of the nodes of a graph), as it is or
        standardised over the graph's nodes, whichever has the lower leave-one-out error on
        the training rows (with one penalty for both, it sets how far the averages are
        shrunk relative to the features). Where the network is not kept,
        the ridge, refitted to all labelled rows, gives ``predict``, ``transduction_`` and
        :meth:`sample_posterior` their means, and its leave-one-out mean squared error their
        variance (out of sample already: ``std_scale_`` is 1); ``network_used_`` records
        the outcome. Rows predicted without an adjacency are isolated nodes to it, whose
        graph average is their own features. ``"auto"``: on for a fit on a table (with or
        without unlabelled rows beside the labelled ones) and for a fit with an adjacency
        among the rows (``adjacency=``; at most a million nodes and 25 million feature
        values), compared on at least 5 validation rows drawn from the labelled ones: on a
        table from 20 labelled rows on (``validation_fraction`` of them, and 5 where that is
        fewer), with an adjacency from 41 labelled nodes on (``early_stopping="auto"``
        holds them out, and where it does not stop early, up to 190 rows, the network
        trains all ``max_epochs`` on the others; held-out rows stay in the network's input,
        unlabelled, as the nodes of a graph do); off in graph mode (``graph=``) and with
        ``early_stopping=False``. ``True``: in every fit (an error with
        ``early_stopping=False``). A continued fit (``partial_fit``, a warm start) whose
        call holds out too few rows to compare keeps the last comparison's choice: where
        that was the ridge, the ridge it fitted goes on predicting; its network goes on
        learning what it learnt in the first call: a correction to that call's ridge, or the
        targets themselves (where the first call did not compare, or kept the network on
        the targets).
        Needs the Gaussian head and features mode (not ``graph=``). On fully labelled
        tables the network alone loses to a ridge where the target is close to linear in
        the features, and on small tables: test mean squared error 3-6 times the ridge's
        on ``make_regression`` data with 750 rows, 1.2-1.5 times on the star98 table
        bundled with statsmodels. With the fallback those fits predict as the ridge does.
        On 25 and 40 rows of eight tables (three draws each) the defaults had 0.96 and 0.91
        times the ridge's squared error (geometric means; worst 1.19 and 1.00), the network
        alone 1.8 and 1.7 times. With 40 or 100 of 1,000 rows labelled and the others
        unlabelled, on the same tables, the network alone had 1.7 and 1.4 times the squared
        error of a ridge on the labelled rows (up to 105 times on a target linear in 5 of 20
        features), the defaults 0.88 and 0.70 times (worst 1.13 and 1.02). Where the
        target's nonlinear part is large the correction does the most (Friedman #2: 0.07-0.10
        times the ridge's error with 100 labelled rows, the network alone 0.21-0.33), but
        with four layers on Friedman #1 with 750 labelled rows (a row of
        ``benchmarks/defaults.py``) a network on the targets had a test squared error of
        3.28, the ridge plus its correction 3.80.
        On contextual stochastic block models (2,000 nodes, 100 of them labelled, homophily
        0.2 to 0.9, 16 graphs) the fallback chose the ridge in all 16 fits; the squared
        error on the unlabelled nodes was 0.69 times the network's alone (geometric mean)
        and 0.83 times the better of a ridge on the features and one on their SGC average
        (worst 1.005), where the network alone had 1.21 times it
        (``benchmarks/difformer_regression.py --task csbm``).
    uncertainty : {"gaussian", "mc_dropout"}, default="gaussian"
        What ``predict(return_std=True)`` and :meth:`sample_posterior` represent.
        ``"gaussian"``: the head predicts a mean and a variance per output; the mean is
        trained by the same squared error as with ``"mc_dropout"`` and the variance by the
        Gaussian negative log-likelihood around it, on the detached final hidden state
        (:class:`~skdiff.nn.losses.GaussianNLL`), so the variance learns the size of the
        errors, noise included, without slowing the fit of the mean. The predictive
        distribution is that Gaussian under Monte Carlo dropout (Kendall and Gal, NeurIPS
        2017): a sample draws from the Gaussian of one pass with dropout active, shifted
        so that the call's passes are centred on ``predict``'s mean (below), and the
        returned variance is the passes' mean variance plus the variance of their means
        (30 passes, seeded by the fit). The second term is what the network does not know:
        with few labelled rows the variance fitted to them understates the errors
        elsewhere. Without dropout (``dropout_=0``, what ``dropout="auto"`` picks for
        fully labelled rows without a graph) it is the head's Gaussian alone. With
        validation rows (``early_stopping``; at least 20) the head's
        standard deviation of each output is first rescaled by split conformal
        prediction on them (``std_scale_``: its 90 % intervals reach the
        :math:`\lceil 0.9 (n + 1) \rceil`-th smallest standardised error of the ``n``
        rows, so that they cover a new exchangeable row with probability at least 0.9).
        With label propagation the labelled nodes'
        values are known: their standard deviation is 0. ``"mc_dropout"``: samples are
        forward passes with dropout active, the spread of their means only (it leaves out
        the noise of ``y``: on tables, 95 % intervals that cover far fewer than 95 % of the
        targets, see ``benchmarks/regression_uncertainty.py``). A dropout draw drops the
        same units for every row, so a row's spread does not depend on the other rows of
        the call. With either head the passes of a :meth:`sample_posterior` call are
        centred on ``predict``'s mean: draw ``s`` is that mean plus pass ``s``'s
        deviation from the mean of the call's passes (plus, with ``"gaussian"``, the noise
        of pass ``s``'s Gaussian). The thinned networks' average is not the full
        network's output, so uncentred draws would average to another point forecast
        than ``predict``'s; centred, their average is ``predict``'s mean (exactly with
        ``"mc_dropout"``) and their spread is unchanged: draw the samples of a row in one
        call. A single draw (``n_samples=1``) is its pass as drawn.
    %(training_parameters)s

    Attributes
    ----------
    n_outputs_ : int
        Columns of ``y`` (1 for 1-D ``y``).
    y_mean_, y_scale_ : ndarray of shape (n_outputs,)
        Standardisation of ``y`` (over the labelled rows).
    transduction_ : ndarray of shape (n_fitted_rows,) or (n_fitted_rows, n_outputs)
        Predicted value of every row seen in ``fit`` (every node in graph mode), after
        ``label_propagation`` when it applies.
    %(uncertainty_)s
    std_scale_ : ndarray of shape (n_outputs,)
        Calibration factor of the Gaussian head's standard deviation, fitted on the
        validation rows (ones without them, with fewer than 20, or with
        ``uncertainty="mc_dropout"``; a ``partial_fit`` call or warm start with fewer than
        20 keeps the last calibration's).
    label_propagation_ : bool
        Whether the known values were propagated over the graph (see
        ``label_propagation``).
    network_used_ : bool
        Whether the means come from the network (``True``: with ``linear_fallback``, the
        ridge plus the network's correction) or from the ridge of ``linear_fallback``
        alone, which the correction did not beat on the validation rows.
    network_target_ : {"residuals", "targets"}
        What the network learnt: the residuals of the ``linear_fallback`` ridge (its
        predictions are the ridge's plus the network's correction) or the targets
        themselves (``linear_fallback=False``, fits that do not compare, and fits whose
        network on the targets predicted the validation rows better).
    linear_fallback_ : sklearn.linear_model.RidgeCV or None
        The ridge ``linear_fallback`` compared the network with (on the scaled features and
        standardised targets): fitted to the training rows where the network is used
        (with ``network_target_="residuals"``, the one its correction is added to); else
        refitted to all labelled rows, the one that predicts. Its ``loo_mse_`` holds the
        leave-one-out mean squared error per output at the chosen penalty (the table of
        every penalty's errors is not kept). ``None`` when it was off.
    %(input_attributes)s
    init_scores_ : ndarray of shape (n_init,)
        Best validation loss of every initialisation (without validation rows, the training
        loss, without dropout, of the weights it ends on).
    %(network_attributes)s

    See Also
    --------
    DIFFormerClassifier : the same network for classification.
    sklearn.linear_model.Ridge : the linear baseline on features.

    References
    ----------
    %(references)s

    Examples
    --------
    >>> import numpy as np
    >>> from skdiff import DIFFormerRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=200)
    >>> y_semi = y.copy()
    >>> y_semi[100:] = np.nan  # the second half is unlabelled
    >>> reg = DIFFormerRegressor(n_layers=2, random_state=0).fit(X, y_semi)
    >>> bool(reg.score(X[100:], y[100:]) > 0.9)
    True
    >>> reg.sample_posterior(X[:2], n_samples=5, random_state=0).shape
    (2, 5)
    """

    _nan_is_unlabelled = True
    # the mean trained by exactly the squared error of uncertainty="mc_dropout", so that
    # weight_decay regularises it as much
    _gaussian_mean_weight = 1.0

    def __init__(self, *, feature_scaling="auto", kernel="simple", qk_norm="global",
                 n_layers="auto", hidden_dim=64, n_heads=1, alpha=0.5, dropout="auto",
                 graph_weight=None, value_projection=False, attention_scope="all", block_size=1024,
                 label_propagation=False, propagation_alpha=0.5, linear_fallback="auto",
                 uncertainty="gaussian", max_epochs=300, lr=3e-3, weight_decay=5e-3,
                 batch_size=None, early_stopping="auto", validation_fraction=0.1,
                 n_iter_no_change=50, n_init=1, warm_start=False,
                 device="auto", n_threads=None, mixed_precision=None, accelerator=None,
                 random_state=None, verbose=0, callbacks=None):
        self._init_params(locals())

    _parameter_constraints = {
        **_DIFFormerBase._parameter_constraints,
        "label_propagation": [StrOptions({"auto"}), "boolean"],
        "propagation_alpha": [Interval(numbers.Real, 0, 1, closed="left")],
        "linear_fallback": [StrOptions({"auto"}), "boolean"],
        "uncertainty": [StrOptions({"gaussian", "mc_dropout"})],
    }

    @property
    def _gaussian_mc(self):
        # the Gaussian head under Monte Carlo dropout: with few labelled rows the variance
        # fitted to them understates the errors elsewhere, and the spread of the passes adds
        # what the network does not know there; a network without dropout has one pass, and
        # so does the linear_fallback ridge (no dropout: its passes would all be equal)
        return self._dropout_used != 0 and self.__dict__.get("network_used_", True)

    def _resolved_dropout(self, inputs, rows):
        dropout = super()._resolved_dropout(inputs, rows)
        # "auto" keeps dropout where the spread is dropout's alone, or where too few rows
        # would be held out to calibrate a head without it
        if self.dropout == "auto" and dropout == 0 and (
                self.uncertainty == "mc_dropout" or
                n_validation_rows(self.validation_fraction, inputs.n) < MIN_CALIBRATION_ROWS):
            return AUTO_DROPOUT
        return dropout

    def _needs_validation_rows(self, data):
        # without dropout the Gaussian head is the whole predictive spread, fitted to rows
        # the network has seen: fully labelled rows give up a validation split to calibrate
        # it (std_scale_), and early stopping keeps the best epoch on them
        return self.dropout_ == 0 and self._gaussian and \
            not self._labels_scarce(data.inputs, data.rows)

    def _holds_out_rows(self, data):
        # linear_fallback compares the network with a ridge on validation rows: the labelled
        # rows of a table (with or without unlabelled rows beside them) and the labelled
        # nodes of a graph given with adjacency=, once enough would be held out to compare
        # on, hold them out even where early_stopping="auto" does not stop early (a split of
        # a few rows stops on noise)
        if self._fallback_forced:
            return True
        if self.linear_fallback != "auto" or not self._gaussian or data.graph is not None:
            return False
        inputs = data.inputs
        if inputs.has_graph:
            enough = data.valid_rows is not None or \
                n_validation_rows(self.validation_fraction, data.rows.size) >= MIN_FALLBACK_ROWS
            return (enough and inputs.n <= AUTO_MAX_NODES
                    and 2 * inputs.n * inputs.n_features <= GRAPH_CHECK_MAX_CELLS)
        # a table: from 4 * MIN_FALLBACK_ROWS labelled rows on, of which _n_validation
        # holds out at least MIN_FALLBACK_ROWS, or fewer where validation_fraction holds
        # out that many
        n = data.rows.size
        return data.valid_rows is not None or n >= 4 * MIN_FALLBACK_ROWS or \
            n_validation_rows(self.validation_fraction, n) >= MIN_FALLBACK_ROWS

    def _make_data(self, X, y, *, reset, graph=None, **fit_params):
        if self._fallback_forced:
            if graph is not None:
                raise ValueError(
                    "linear_fallback=True fits a ridge on the rows' features, which graph mode "
                    "(graph=...) does not pass as rows: pass the features as X (with "
                    "adjacency=...), or set linear_fallback='auto' or False.")
            if not self._gaussian:
                raise ValueError(
                    "linear_fallback=True predicts with the ridge a mean and, as the Gaussian "
                    "head's variance, its leave-one-out error; uncertainty='mc_dropout' has no "
                    "such head: set uncertainty='gaussian', or linear_fallback='auto' or "
                    "False.")
        data = super()._make_data(X, y, reset=reset, graph=graph, **fit_params)
        data.extra["fresh"] = reset  # a first call sets the ridge the network corrects
        return data

    def _validation_rows(self, data):
        train, valid = super()._validation_rows(data)
        if self._fallback_forced and valid.size < 2:
            raise ValueError(
                f"linear_fallback=True compares the network with a ridge on validation rows, "
                f"and this fit holds {valid.size} (early_stopping={self.early_stopping!r}, "
                f"{data.rows.size} labelled rows): set early_stopping='auto' or True with "
                "a validation_fraction that leaves at least 2, pass validation_mask, or set "
                "linear_fallback='auto' or False.")
        return train, valid

    def _n_validation(self, data, n):
        # the fallback compares the network with the ridge on at least MIN_FALLBACK_ROWS
        # rows: with fewer it does not compare, and on a table of 20-49 labelled rows, where
        # validation_fraction=0.1 holds out fewer, the network would predict unguarded
        # (test MSE up to 100-200 times the ridge's on 40 rows of a near-linear target).
        # From 4 * MIN_FALLBACK_ROWS labelled rows on, that many are held out on a table.
        n_val = super()._n_validation(data, n)
        if n_val >= MIN_FALLBACK_ROWS or n < 4 * MIN_FALLBACK_ROWS or \
                data.graph is not None or data.inputs.has_graph:
            return n_val
        # _holds_out_rows: True with linear_fallback=True, False with False
        return MIN_FALLBACK_ROWS if self._holds_out_rows(data) else n_val

    @property
    def _fallback_forced(self):
        """``linear_fallback=True`` (numpy's ``True`` too), as opposed to ``"auto"``."""
        return not isinstance(self.linear_fallback, str) and bool(self.linear_fallback)

    def _fallback_on(self, data, valid):
        """Whether ``linear_fallback`` compares the network with a ridge in this fit:
        always with ``True``; with ``"auto"`` in the fits that hold out rows for it
        (:meth:`_holds_out_rows`) once there are ``MIN_FALLBACK_ROWS`` of them."""
        return self._fallback_forced or (self._holds_out_rows(data)
                                         and valid.size >= MIN_FALLBACK_ROWS)

    def _fallback_outputs(self, outputs, data, train, valid):
        """Compare the network with a ridge fitted to the training rows; keep the network's
        outputs if its means beat the ridge's on the validation rows by more than
        ``FALLBACK_MARGIN_SE`` (two) standard errors, else the ridge's outputs for every
        fitted row.

        The ridge that then predicts is refitted to all labelled rows (training and
        validation), as a user's ``RidgeCV`` would be, and its variance is its mean
        leave-one-out squared error there (per output): an out-of-sample estimate that
        needs no calibration (``std_scale_`` stays 1).
        """
        compare = self._fallback_on(data, valid)
        self.network_target_ = "targets" if self.__dict__.get("_skip") is None else "residuals"
        # the network learnt a correction to the ridge of _make_datasets, if it had one
        outputs = self._with_skip(outputs, data.inputs, every_sample=True)
        if not compare and data.continued and not self.__dict__.get("network_used_", True):
            # a continued fit (partial_fit) whose call holds out too few rows to compare
            # keeps the ridge the last comparison chose, rather than switching to the
            # network unjudged
            self.__dict__.pop("_device_summaries", None)
            return self._ridge_outputs(self._fallback_features(data.inputs))
        self.network_used_, self.linear_fallback_ = True, None
        self._fallback_graph_scale = None
        if not compare:
            return outputs
        k = self.n_outputs_
        targets = data.targets.reshape(len(data.targets), k)
        skip = self.__dict__.get("_skip")
        if skip is not None:  # the ridge the network's correction is added to
            ridge = skip[0]
            features = self._ridge_features(data.inputs, skip[1])
            self._fallback_graph_scale = skip[1]
        else:
            features, ridge = self._training_ridge(data.inputs, targets, data.weights, train)
        w = data.weights[valid] / data.weights[valid].sum()
        err_net = self._squared_errors(outputs, data, valid)
        err_ridge = ((ridge.predict(features[valid]).reshape(-1, k) - targets[valid]) ** 2
                     ).mean(1)
        better, mean, se = beats_by_se(err_net, err_ridge, w, n_se=FALLBACK_MARGIN_SE)
        if self.verbose:
            print(f"linear_fallback: the network's validation MSE is {abs(mean):.4f} "
                  f"{'below' if mean < 0 else 'above'} the ridge's (standard error {se:.4f}; "
                  f"kept beyond {FALLBACK_MARGIN_SE:g}): "
                  f"{'network kept' if better else 'ridge used'}")
        if better:
            self.linear_fallback_ = ridge
            return outputs
        self.network_used_ = False
        # predictions never run the network: no cache of its summaries on the device
        self.__dict__.pop("_device_summaries", None)
        self.linear_fallback_ = self._fit_ridge(features, targets, data.weights, data.rows)
        return self._ridge_outputs(features)

    def _training_ridge(self, inputs, targets, weights, rows, row_errors=False):
        """(features, ridge): the fallback's features of ``inputs`` and its ridge fitted to
        ``rows`` (with a graph, the scale of the averages chosen too; ``row_errors`` as
        :meth:`_fit_ridge`)."""
        if inputs.has_graph:
            return self._graph_ridge(inputs, targets, weights, rows, row_errors)
        self._fallback_graph_scale = None
        features = inputs.scaled_features()  # features mode: row i is sample i
        return features, self._fit_ridge(features, targets, weights, rows, row_errors)

    def _make_datasets(self, data, train, valid):
        """The datasets of the network's training: with ``linear_fallback`` comparing in
        this fit, the targets less the predictions of a ridge fitted to the training rows
        (leave-one-out on those rows), divided by the training rows' standard deviation of
        them: the correction the network learns, at the scale of a standardised target
        (:meth:`_with_skip` adds the ridge back). A continued fit keeps its first call's
        ridge and scale."""
        ids = data.inputs.row_ids
        k = self.n_outputs_
        targets = data.targets.reshape(len(data.targets), k)
        if data.extra.get("fresh", True):
            self._skip = None
            if not self._fallback_on(data, valid):
                return super()._make_datasets(data, train, valid)
            _, ridge = self._training_ridge(data.inputs, targets, data.weights, train,
                                            row_errors=True)
            scale = self._fallback_graph_scale
            residuals = targets - _ridge_means(ridge, self._ridge_features(data.inputs,
                                                                           scale))[ids]
            # the training rows' residuals left out one at a time (their sign is the
            # in-sample one's): what the ridge gets wrong on rows it has not seen, which
            # in-sample residuals understate where the ridge has nearly as many
            # coefficients as rows
            residuals[train] = np.sign(residuals[train]) * np.sqrt(
                ridge.__dict__.pop("loo_errors_"))
            spread = np.maximum(residuals[train].std(0), MIN_RESIDUAL_SCALE)
            self._skip = (ridge, scale, spread)
        elif self.__dict__.get("_skip") is None:
            return super()._make_datasets(data, train, valid)
        else:
            residuals = targets - self._skip_means(data.inputs)[ids]
        residuals = (residuals / self._skip[2]).reshape(data.targets.shape)
        data = dataclasses.replace(data, extra={**data.extra, "targets": residuals})
        return super()._make_datasets(data, train, valid)

    def _train_inits(self, data, train, valid, train_ds, valid_ds, epochs):
        """Train the network on the ridge's residuals (:meth:`_make_datasets`) and, with at
        least ``MIN_CALIBRATION_ROWS`` validation rows to tell two networks apart, a second
        one from the same seed on the targets themselves, kept instead only if its
        predictions beat the ridge plus the correction on the validation rows by the
        one-standard-error rule (the correction, which starts near zero, is the simpler
        model)."""
        seed = self.seed_
        super()._train_inits(data, train, valid, train_ds, valid_ds, epochs)
        skip = self.__dict__.get("_skip")
        if skip is None or valid.size < MIN_CALIBRATION_ROWS:
            return
        first = (self.seed_, self.net_, self.module_, self.history_, self.init_scores_)
        err_residuals = self._validation_errors(data, valid)
        self._skip, self.seed_ = None, seed
        train_ds, valid_ds = super()._make_datasets(data, train, valid)
        super()._train_inits(data, train, valid, train_ds, valid_ds, epochs)
        w = data.weights[valid] / data.weights[valid].sum()
        better, mean, se = beats_by_se(self._validation_errors(data, valid), err_residuals,
                                       w)
        if self.verbose:
            print(f"linear_fallback: the validation MSE of a network on the targets is "
                  f"{abs(mean):.4f} {'below' if mean < 0 else 'above'} that of the ridge "
                  f"plus a correction (standard error {se:.4f}): "
                  f"{'targets' if better else 'residuals'} kept")
        if not better:
            self._skip = skip
            self.seed_, self.net_, self.module_, self.history_, self.init_scores_ = first

    def _validation_errors(self, data, valid):
        """:meth:`_squared_errors` on the ``valid`` rows of the current network's outputs
        (one forward over every sample), the ridge's means added where the network learnt
        a correction to it."""
        with self._inference():
            outputs = self._joint_outputs(data.inputs)[0]
        return self._squared_errors(
            self._with_skip(outputs, data.inputs, every_sample=True), data, valid)

    def _squared_errors(self, outputs, data, rows):
        """Squared errors of the standardised means in ``outputs`` (over every sample) on
        the data rows ``rows``, averaged over the outputs."""
        ids = data.inputs.row_ids
        k = self.n_outputs_
        targets = data.targets.reshape(len(data.targets), k)[rows]
        return ((outputs[ids[rows], :k] - targets) ** 2).mean(1)

    def _skip_means(self, inputs):
        """The standardised predictions, for every sample of ``inputs``, of the ridge the
        network's correction is added to."""
        ridge, scale, _ = self._skip
        return _ridge_means(ridge, self._ridge_features(inputs, scale))

    def _with_skip(self, outputs, inputs, every_sample=False):
        """The network's ``outputs`` (over every sample of ``inputs`` with
        ``every_sample``, else over those ``inputs.ids`` names where it has ids) with the
        ridge's means added to the means, where the network learnt a correction to it."""
        if self.__dict__.get("_skip") is None:
            return outputs
        base = self._skip_means(inputs)
        if not every_sample and inputs.ids is not None:
            base = base[inputs.ids]
        k, c = self.n_outputs_, self._skip[2]
        outputs = outputs.copy()
        outputs[:, :k] = base + c * outputs[:, :k]
        if outputs.shape[1] > k:  # the Gaussian head's raw variances: softplus(raw) + 1e-6
            raw = outputs[:, k:]
            var = c ** 2 * (np.logaddexp(0.0, raw) + 1e-6) - 1e-6
            outputs[:, k:] = softplus_inverse(np.maximum(var, 1e-12))
        return outputs

    def _fallback_features(self, inputs):
        """What the ``linear_fallback`` ridge reads: the scaled features the network reads,
        and, when the fit had a graph, beside them their 2-hop SGC average over the graph of
        ``inputs`` (:func:`~skdiff.difformer._propagation.smoothed_features`; without an
        adjacency every row is an isolated node, whose average is its own features), its
        columns divided by the fit's ``_fallback_graph_scale``."""
        return self._ridge_features(inputs, self.__dict__.get("_fallback_graph_scale"))

    @staticmethod
    def _ridge_features(inputs, scale):
        """The scaled features of ``inputs`` and, where ``scale`` is not None, beside them
        their 2-hop graph average with its columns divided by ``scale``."""
        F = inputs.scaled_features()
        if scale is None:
            return F
        return _beside(F, smoothed_features(inputs.adjacency, F) if inputs.has_graph else F,
                       scale)

    def _graph_ridge(self, inputs, targets, weights, rows, row_errors=False):
        """The fallback's features of a fit with a graph and its ridge fitted to ``rows``,
        setting ``_fallback_graph_scale``.

        Averaging shrinks the columns' spread, so with one penalty for both blocks the ridge
        shrinks the averages' weights more than the features'. Which suits the graph
        depends on how far its averages tell the target beyond the features, so the averages
        are taken as they are or standardised over the graph's nodes, whichever gives the
        ridge on ``rows`` the lower leave-one-out error."""
        F = inputs.scaled_features()
        S = smoothed_features(inputs.adjacency, F)
        best = None
        # the columns' standard deviations, as feature_scaling="standard" measures them
        for scale in (np.ones(S.shape[1]), FeatureScaling("standard").fit(S).scale_):
            Z = _beside(F, S, scale)
            ridge = self._fit_ridge(Z, targets, weights, rows, row_errors)
            if best is None or ridge.loo_mse_.mean() < best[0]:
                best = (ridge.loo_mse_.mean(), scale, Z, ridge)
        _, self._fallback_graph_scale, features, ridge = best
        return features, ridge

    @staticmethod
    def _fit_ridge(features, targets, weights, rows, row_errors=False):
        """``RidgeCV`` on ``rows`` (leave-one-out over ``FALLBACK_ALPHAS``, one penalty per
        output), with its weighted mean leave-one-out squared error per output at the chosen
        penalty as ``loo_mse_`` and, with ``row_errors``, every row's leave-one-out squared
        error there as ``loo_errors_`` (rows, outputs)."""
        from sklearn.linear_model import RidgeCV

        k = targets.shape[1]
        # the penalty is weighed against the weighted sum of squared errors, so the weights
        # are rescaled to sum to the number of rows that count: a row of weight 0 is then
        # exactly an unlabelled one, and multiplying every weight by a constant changes
        # nothing (as documented for sample_weight)
        w = weights[rows]
        w = w * (np.count_nonzero(w) / w.sum())
        ridge = RidgeCV(alphas=FALLBACK_ALPHAS, alpha_per_target=k > 1,
                        store_cv_results=True).fit(features[rows], targets[rows],
                                                   sample_weight=w)
        # cv_results_: (rows, outputs, alphas) leave-one-out squared errors, each times its
        # row's weight (the weighted fit rescales the rows by the weights' square roots)
        cv = ridge.cv_results_.reshape(len(rows), k, -1)
        best = np.searchsorted(FALLBACK_ALPHAS, np.atleast_1d(ridge.alpha_) * (1 - 1e-12))
        best = np.broadcast_to(best, (k,))
        errors = cv[:, np.arange(k), best]
        ridge.loo_mse_ = errors.sum(0) / w.sum()
        if row_errors:  # each row's own (unweighted) one, shape (rows, outputs)
            ridge.loo_errors_ = errors / w[:, None]
        # the table of every penalty's errors is dropped: a fitted estimator keeps no array
        # that grows with its training rows (_make_datasets pops loo_errors_ once used)
        del ridge.cv_results_
        ridge.set_params(store_cv_results=False)
        return ridge

    def _ridge_outputs(self, features):
        """Raw Gaussian-head outputs of the ``linear_fallback`` ridge: its standardised
        means and, as raw variances, its leave-one-out mean squared error."""
        ridge = self.linear_fallback_
        means = _ridge_means(ridge, features)
        var = np.maximum(ridge.loo_mse_ - 1e-6, 1e-8)  # gaussian_variance: softplus + 1e-6
        raw_var = softplus_inverse(var)
        return np.hstack([means, np.broadcast_to(raw_var, means.shape)])

    def _task_outputs(self, prepared, mc=False):
        if self.__dict__.get("network_used_", True):
            return self._with_skip(self._network_outputs(prepared, mc), prepared[1])
        inputs = prepared[1]
        features = self._fallback_features(inputs)
        if inputs.ids is not None:  # the rows of X are these samples of a graph
            features = features[inputs.ids]
        return self._ridge_outputs(features)

    def _calibrate(self, valid_outputs, valid_targets, continued=False):
        if not self.network_used_:  # the ridge's leave-one-out variance is out of sample
            self.std_scale_ = np.ones(self.n_outputs_)
            return
        self._calibrate_std(lambda: valid_outputs, valid_targets, continued)

    def _propagate_labels(self, outputs, data):
        """Spread the fitted values over the graph (``label_propagation``), see
        :class:`skdiff.difformer._propagation.ValueSmoother`."""
        smoother = self._checked_smoother(
            data, lambda A, seeds, values: ValueSmoother(A, seeds, values,
                                                         self.propagation_alpha),
            ValueSmoother.graph_predicts_values,
            lambda spread_mse, mean_mse: "values spread along the graph predict held-out "
            f"labelled nodes with squared error {spread_mse:.3f} (standardised), their mean "
            f"{mean_mse:.3f}")
        if smoother is None:
            return outputs
        self._keep_smoother(smoother, data)
        return self._smooth_means(smoother, outputs)

    def _smooth_means(self, smoother, outputs):
        """``outputs`` with the predicted values (the first ``n_outputs_`` columns) smoothed.
        A Gaussian head's variance columns stay as the network gave them, except on the
        labelled nodes, whose values are known: there the raw variance is ``-inf``, a
        standard deviation of 0 (as every Monte Carlo pass clamps them too)."""
        k = self.n_outputs_
        if outputs.shape[1] == k:
            return smoother.smooth(outputs)
        var = outputs[:, k:].copy()
        var[smoother.seeds] = -np.inf
        return np.concatenate([smoother.smooth(outputs[:, :k]), var], axis=1)

    def _smoothed(self, outputs):
        smoother = self.__dict__.get("_smoother")
        return outputs if smoother is None else self._smooth_means(smoother, outputs)

    def partial_fit(self, X, y, adjacency=None, *, graph=None, validation_mask=None,
                    sample_weight=None):
        """Train one more epoch, starting from the current weights (or from scratch if unfitted).

        %(partial_fit_summary)s

        Parameters
        ----------
        %(fit_inputs)s

        Returns
        -------
        self : DIFFormerRegressor
            The estimator, trained one more epoch.
        """
        return self._fit(X, y, partial=True, adjacency=adjacency, graph=graph,
                         validation_mask=validation_mask, sample_weight=sample_weight,
                         keep_rows=True)

    def predict(self, X, adjacency=None, *, graph=None, return_std=False):
        """Predicted values of the rows of X, in the units of ``y``.

        %(predict_modes)s

        Parameters
        ----------
        %(predict_inputs)s
        return_std : bool, default=False
            Also return the predictive standard deviation over 30 Monte Carlo dropout
            passes, seeded by the fit (so ``predict`` is deterministic): with the Gaussian
            head their mean variance plus the variance of their means, with
            ``uncertainty="mc_dropout"`` the spread of their means.

        Returns
        -------
        y_pred : ndarray of shape (n_rows,) or (n_rows, n_outputs)
            Predictions (2-D when ``y`` of ``fit`` was 2-D).
        y_std : ndarray of the same shape
            Predictive standard deviation in the units of ``y``; only with ``return_std``.
        """
        # predict(X, True) puts the flag on adjacency, the second positional argument
        check_not_bool(adjacency, hint="; to get the standard deviation pass "
                       "return_std=True by keyword.")
        return super().predict(X, return_std=return_std, adjacency=adjacency, graph=graph)

    def score(self, X, y, sample_weight=None, *, adjacency=None, graph=None):
        """R² of :meth:`predict` on the rows of ``y`` (rows with ``NaN``, unlabelled, are
        left out).

        %(score_routing)s

        Parameters
        ----------
        %(X)s
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            True targets; ``NaN`` marks an unlabelled row, which is not scored.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-row weight of the R².
        %(adjacency)s
        %(graph)s

        Returns
        -------
        score : float
            The coefficient of determination (uniform average over the outputs).
        """
        return super().score(X, y, sample_weight=sample_weight, adjacency=adjacency,
                             graph=graph)
