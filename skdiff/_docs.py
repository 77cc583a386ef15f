"""Shared parameter documentation, filled into docstrings (as MNE-Python's ``fill_doc``).

A docstring line that holds only ``%(name)s`` becomes that parameter's numpydoc entry: the
header ``name : type, default=<value>`` with the default read from the signature (so the
text cannot disagree with the code) and the shared description below it. The class
docstring reads the defaults of ``__init__``; the docstring of a method that the decorated
class itself defines (``fit``, ``predict``, ``partial_fit``, ...) reads those of the method,
so a parameter that several methods and estimators share has one description; a decorated
function reads its own. A name that is not a parameter of the signature (a fitted
attribute) gets the header ``name : type``. An entry whose value is a list of names is a
group, expanded in order; a string is a verbatim block (e.g. the references of a model
family, or a paragraph that several methods share).
Families add their own entries (e.g. the network parameters shared by a classifier and a
regressor) by passing a dict.
"""

from __future__ import annotations

import inspect
import re
import textwrap

__all__ = ["TRAINING_DOCS", "fill_doc", "parse_docs"]

def parse_docs(text):
    """numpydoc parameter entries (``name : type`` then an indented description) -> a dict
    ``name -> (type, description)`` for :func:`fill_doc`."""
    entries = {}
    for block in re.split(r"\n(?=\S)", textwrap.dedent(text).strip()):
        header, _, body = block.partition("\n")
        name, _, kind = header.partition(" : ")
        entries[name.strip()] = (kind.strip(), " ".join(body.split()))
    return entries


#: name -> (type, description) of the training parameters of the trainable estimators and
#: of their fitted network attributes; lists are groups.
TRAINING_DOCS = parse_docs("""
max_epochs : int
    Most training epochs.
lr : float
    Adam learning rate.
weight_decay : float
    Adam L2 penalty on the weights.
early_stopping : bool or "auto"
    Hold out ``validation_fraction`` of the labelled rows (how: see the class
    description), stop after ``n_iter_no_change`` epochs without a better validation
    score and restore the weights of the best epoch (skorch's
    ``EarlyStopping(load_best=True)``). With too few rows for a validation split (fewer
    than two training rows would remain) the training loss is monitored instead; a class
    that the split would hold out whole (too few rows to stratify) keeps its rows on the
    training side. ``"auto"`` (as in
    :class:`~sklearn.ensemble.HistGradientBoostingClassifier`): on from 10,000 labelled
    rows or with given validation rows, off otherwise, where a validation split stops on
    noise more often than it saves epochs and ``max_epochs`` with weight decay generalises
    better. :class:`~skdiff.DIFFormerRegressor` also turns it on when it trains without
    dropout on fully labelled rows, whose validation rows then calibrate its intervals.
    ``early_stopping_`` holds the value used. Without early stopping the last epoch's
    weights predict, unless their training loss (without dropout) is more than 0.01 above
    that of the weights the epoch with the lowest training loss started from, which are
    then restored (:class:`~skdiff.callbacks.RestoreLowestLoss`; ``restored_epoch_``).
validation_fraction : float in (0, 1)
    Fraction of the candidate rows held out for early stopping, rounded up (as
    :func:`~sklearn.model_selection.train_test_split`). Ignored without
    ``early_stopping``.
n_iter_no_change : int
    Epochs without improvement before early stopping ends training.
n_init : int
    Networks trained from different random initialisations (the first from the fit seed,
    the others from seeds drawn from it); the one with the best validation score
    (without validation rows: the lowest training loss, without dropout, of the weights
    each run ends on) is kept, as ``KMeans`` keeps the best of its ``n_init`` runs. Costs
    ``n_init`` fits; ``init_scores_`` holds every score. A warm start or ``partial_fit``
    continues the kept network.
warm_start : bool
    Continue training the fitted network (keeping its scalers and classes) on the next
    ``fit``, with the current training parameters (``max_epochs``, ``lr``,
    ``weight_decay``, ``batch_size``, early stopping, ``callbacks``, ...). A parameter that
    built the network (its size, its options) must keep its fitted value: a changed one is
    an error, as in ``partial_fit``; set ``warm_start=False`` to fit a new network.
device : str or torch.device
    Where the network runs: any device :class:`torch.device` parses (``'cpu'``,
    ``'cuda'``, ``'cuda:1'``, ``'mps'``, ...) or ``'auto'``: CUDA when available (the GPU
    with the most free memory, so parallel fits spread over several; each process sees
    the GPUs ``CUDA_VISIBLE_DEVICES`` lists), else Apple's MPS, else the CPU. Resolved in
    ``fit`` (``device_``); a device this machine lacks is an error there that lists the
    available ones.
n_threads : int or None
    Torch threads used inside ``fit``, ``predict`` and ``sample_posterior``; the caller's
    setting is restored afterwards. ``None`` leaves torch's setting (all cores by default;
    joblib's workers, as in ``GridSearchCV(n_jobs=k)``, get ``cores // k`` each). On a
    machine that runs other jobs, ``1`` avoids cores waiting on each other.
mixed_precision : {"bf16", "fp16"} or None
    Run the network's forward passes, in training and prediction, under
    :func:`torch.autocast` with this dtype (losses stay in float32); ``None`` runs in
    float32. bf16 suits CPUs and recent GPUs; fp16 needs a GPU (refused on the CPU).
accelerator : accelerate.Accelerator or None
    Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): data-parallel
    training over the processes of ``accelerate launch`` and the accelerator's mixed
    precision; ``device`` is then the accelerator's. ``None`` trains in this process.
random_state : int, RandomState instance or None
    Seeds initialisation, dropout, shuffling and the validation split: the same value
    gives the same predictions on the CPU. The caller's global torch random state is left
    untouched, and so is numpy's unless ``None`` draws the fit seed from it.
verbose : int
    0 prints nothing; 1 shows a progress bar over the epochs of each fit (one per
    initialisation with ``n_init``) with the latest losses, and over long Monte Carlo
    sampling; 2 also prints skorch's table of epochs and early stopping's message.
class_weight : dict, "balanced" or None
    Weights of the classes in the loss, multiplying ``sample_weight``: a dict ``{class:
    weight}``, or ``"balanced"`` for ``n / (n_classes * count)`` over the labelled rows (as
    scikit-learn's ``compute_sample_weight``). ``None``: every class weighs 1.
callbacks : list of skorch callbacks or (name, callback) pairs, or None
    Extra skorch callbacks run during training, after the estimator's own (early
    stopping, the non-finite-loss guard, :class:`~skdiff.callbacks.RestoreLowestLoss`).
    A :class:`~skdiff.callbacks.RestoreLowestLoss` or
    :class:`~skdiff.callbacks.WeightAveraging` here replaces the estimator's own
    ``RestoreLowestLoss``.
classes : array-like of shape (n_classes,) or None
    Every class label, for a first call whose ``y`` lacks some classes (scikit-learn's
    ``partial_fit`` convention): the output layer gets one unit per class and
    ``classes_`` holds them. ``None``: the classes of ``y`` on the first call, the fitted
    ``classes_`` afterwards; a later call must pass those same classes or ``None``.
    :class:`~skdiff.DIFFormerClassifier`'s ``unlabelled`` marker is not a class: listed
    here (as ``classes=np.unique(y)`` lists it for semi-supervised ``y``), it is dropped
    with a warning.
module_ : torch.nn.Module
    The trained network.
net_ : skorch.NeuralNet
    The skorch net that trained it.
history_ : skorch.History
    Per-epoch training loss and validation scores.
early_stopping_ : bool
    Whether early stopping was on in the last fit (``early_stopping`` with ``"auto"``
    resolved for that fit's labelled and validation rows).
restored_epoch_ : int or None
    The epoch whose starting weights the last fit ended on, where its last weights' training
    loss had risen more than 0.01 above theirs (see ``early_stopping``); ``None`` where the
    last weights were kept.
device_ : str
    The device the network is on.
seed_ : int
    The seed of this fit (of the kept initialisation with ``n_init``).
""")
TRAINING_DOCS.update(parse_docs("""
uncertainty_ : str
    The head the network was fitted with, ``"gaussian"`` or ``"mc_dropout"`` (the
    ``uncertainty`` of the last fit from scratch). ``predict``, ``predict(return_std=True)``
    and ``sample_posterior`` read it, so setting ``uncertainty`` after a fit changes
    nothing until the next fit; a warm start or ``partial_fit`` with another
    ``uncertainty`` is refused.
"""))
#: the inputs of the prediction methods that every estimator family shares
TRAINING_DOCS["predict_X"] = """
X : array-like
    Samples in the form ``fit`` takes them (DIFFormer: feature rows, or node ids in
    graph mode; Flowformer: sequences of shape (n_rows, length) or (n_rows, length,
    n_channels)).
"""
TRAINING_DOCS["predict_params"] = """
**predict_params
    The estimator's prediction inputs besides ``X``: ``adjacency`` and ``graph`` for
    the DIFFormer estimators, none for the Flowformer estimators.
"""
TRAINING_DOCS["predict_parameters"] = ["predict_X", "predict_params"]
TRAINING_DOCS["training_parameters"] = [
    "max_epochs", "lr", "weight_decay", "batch_size", "early_stopping",
    "validation_fraction", "n_iter_no_change", "n_init", "warm_start", "device", "n_threads",
    "mixed_precision", "accelerator", "random_state", "verbose", "callbacks"]
TRAINING_DOCS["network_attributes"] = [
    "module_", "net_", "history_", "early_stopping_", "device_", "seed_"]


def _entry(name, docs, signature, indent):
    if name not in docs:
        raise ValueError(f"fill_doc: no documentation for {name!r}.")
    if isinstance(docs[name], list):
        return "\n".join(_entry(n, docs, signature, indent) for n in docs[name])
    if isinstance(docs[name], str):  # a verbatim block (e.g. references)
        return textwrap.indent(textwrap.dedent(docs[name]).strip("\n"), indent)
    kind, text = docs[name]
    param = signature.parameters.get(name)
    header = f"{indent}{name} : {kind}"
    if param is not None and param.default is not inspect.Parameter.empty:
        default = param.default
        header += f', default="{default}"' if isinstance(default, str) else \
            f", default={default!r}"
    # no break after a hyphen: reST would render "scikit-" + newline + "learn" as two words
    body = textwrap.fill(text, width=96 - len(indent), initial_indent=indent + "    ",
                         subsequent_indent=indent + "    ", break_on_hyphens=False)
    return header + "\n" + body


def _filled(doc, docs, signature):
    """``doc`` with every ``%(name)s`` line expanded (``doc`` unchanged when it has none)."""
    if not doc:
        return doc
    return _PLACEHOLDER.sub(lambda m: _entry(m.group(2), docs, signature, m.group(1)), doc)


#: a docstring line that holds only ``%(name)s``: (indent, name)
_PLACEHOLDER = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(*extra_docs):
    """Decorator: expand ``%(name)s`` lines of a class docstring and of the docstrings of the
    methods the class defines, or of a function's docstring (see the module docstring)."""
    docs = dict(TRAINING_DOCS)
    for d in extra_docs:
        docs.update(d)

    def decorate(cls):
        if inspect.isfunction(cls):  # a plain function: its own signature's defaults
            cls.__doc__ = _filled(cls.__doc__, docs, inspect.signature(cls))
            return cls
        cls.__doc__ = _filled(cls.__doc__, docs, inspect.signature(cls.__init__))
        for member in vars(cls).values():
            func = member.__func__ if isinstance(member, (classmethod, staticmethod)) \
                else member
            if inspect.isfunction(func):
                func.__doc__ = _filled(func.__doc__, docs, inspect.signature(func))
        return cls

    return decorate
